/**
 * Child process: N proposals through the whole lifecycle on a fresh FileStore with durable
 * commits, timed per step through the engine's API (SPEC §9 allows one process or a batch run):
 *
 *   propose   engine.propose, one after another (each is what one `pipeline propose` does)
 *   confirm   the review stage's confirm command, one after another, and again 8 at a time
 *   judge     runStage(judge) with the shipped offline jury, concurrency 8, promotion detached
 *   promote   runStage(promote), concurrency 8
 *
 * Usage: node bench/scenarios/lifecycle.js N   → one JSON line on stdout.
 */
import { benchEnv, findReviewCommand, openEngine, ROOT, runOptions, runReviewCommand, runStage, scratch, stageOf } from '../lib/engine.js';
import { candidate, visibilityOf } from '../lib/fixtures.js';

const n = Number(process.argv[2] ?? 1000);
const work = scratch('pipeline-bench-life-');
const env = benchEnv(work.dir);
const engine = await openEngine(ROOT, `${work.dir}/store`, env);
const result = { n, ms: {}, counts: {} };

async function timed(name, body) {
  const start = performance.now();
  await body();
  result.ms[name] = performance.now() - start;
}

async function inParallel(items, concurrency, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

function expect(outcome, kind, what) {
  if (outcome.kind !== kind) throw new Error(`${what}: expected ${kind}, got ${outcome.kind}: ${outcome.message ?? outcome.reason ?? ''}`);
}

try {
  const ids = [];
  await timed('propose', async () => {
    for (let i = 0; i < n; i++) {
      const artifactId = `01J0ART${String(i).padStart(19, '0')}`;
      const outcome = await engine.propose({ artifact_id: artifactId, candidate: candidate(i, artifactId) }, { stage: 'propose', actor: 'cli' });
      expect(outcome, 'committed', 'propose');
      ids.push(outcome.id);
    }
  });

  // Half confirmed one by one (a person's commands), half in parallel (a scripted review).
  const confirm = findReviewCommand(engine.pipeline, 'confirm');
  const half = Math.floor(n / 2);
  const confirmOne = async (index) =>
    expect(await runReviewCommand(engine, confirm, ids[index], { visibility: visibilityOf(index) }, 'cli'), 'committed', 'confirm');
  await timed('confirm_sequential', async () => {
    for (let i = 0; i < half; i++) await confirmOne(i);
  });
  await timed('confirm_parallel8', () =>
    inParallel(
      ids.slice(half).map((_, k) => half + k),
      8,
      confirmOne,
    ),
  );

  const judge = { ...stageOf(engine, 'judge'), then: undefined };
  const judged = runOptions(8);
  await timed('judge', async () => {
    result.counts.judge = (await runStage(engine, judge, judged.options)).counts;
  });
  const promoted = runOptions(8);
  await timed('promote', async () => {
    result.counts.promote = (await runStage(engine, stageOf(engine, 'promote'), promoted.options)).counts;
  });
  result.notes = judged.notes.length + promoted.notes.length;
  result.maxRssKb = process.resourceUsage().maxRSS;
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  work.cleanup();
}
