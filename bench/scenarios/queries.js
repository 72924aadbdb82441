/**
 * The read side through the real binary: `status` and `list --state confirmed --json` on
 * generated stores of 1,000 / 10,000 / 100,000 proposals (1,000 of them confirmed in each, so
 * the listing's output is the same size and only the store grows), each timed first — with no
 * status index under <store>/.index/, so the command reads every proposal and builds it — and
 * warm; `run promote` when everything is already promoted (the fixed cost of a run); and the
 * cold start of `status` on a small store, with and without the configuration cache.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { benchEnv, droppedNodeVariables, scratch } from '../lib/engine.js';
import { dropStatusIndex, runOnce, timeCommand } from '../lib/cli.js';
import { writeStore } from '../lib/fixtures.js';

const CONFIRMED = 1000;

/**
 * Fill the configuration cache, as any earlier command would, so that "first" measures the store
 * and not the configuration's full validation too: `status` on a store that does not exist reads
 * and caches the configuration and writes nothing. (`validate` checks everything and caches
 * nothing: until 2026-12-06 the bench warmed with it, so each size's first `status` — and the
 * largest peak RSS of its runs — included a full validation, ~15 MB and ~300 ms.)
 */
function warmConfigCache(env, scratchDir) {
  runOnce(['--store', path.join(scratchDir, 'no-store'), 'status'], env, scratchDir);
}

function summary(timing) {
  return { medianMs: timing.medianMs, runs: timing.runs, maxRssKb: timing.maxRssKb, outBytes: timing.outBytes };
}

/** Status and list at one store size. `log` reports progress on stderr. */
export function measureStore(size, { warmRuns = 5, log = () => {} } = {}) {
  const work = scratch('pipeline-bench-store-');
  try {
    const env = benchEnv(work.dir);
    const store = path.join(work.dir, 'store');
    const started = performance.now();
    const { counts, samples } = writeStore(store, size, Math.min(CONFIRMED, size));
    log(`  generated ${size} proposals in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    warmConfigCache(env, work.dir);
    const args = (...rest) => ['--store', store, ...rest];
    const firstRuns = size >= 100_000 ? 1 : 3;
    const result = { size, counts };

    result.statusFirst = summary(timeCommand(args('status'), env, work.dir, { runs: firstRuns, before: () => dropStatusIndex(store) }));
    result.statusWarm = summary(timeCommand(args('status'), env, work.dir, { runs: warmRuns }));
    const listArgs = args('list', '--state', 'confirmed', '--json');
    result.listFirst = summary(timeCommand(listArgs, env, work.dir, { runs: firstRuns, before: () => dropStatusIndex(store) }));
    const listWarm = timeCommand(listArgs, env, work.dir, { runs: warmRuns });
    const listed = JSON.parse(listWarm.last.stdout());
    if (listed.length !== counts.confirmed) throw new Error(`list printed ${listed.length} proposals, expected ${counts.confirmed}`);
    result.listWarm = summary(listWarm);
    log(`  status ${Math.round(result.statusWarm.medianMs)} ms, list ${Math.round(result.listWarm.medianMs)} ms (warm)`);
    // One review command on the oldest confirmed proposals (every store has some): its cost
    // should not grow with the store.
    const confirmed = [...samples.confirmed];
    result.reviewOne = summary(timeCommand([], env, work.dir, { runs: 3, argsOf: () => args('unconfirm', confirmed.shift()) }));
    // Everything judged is promoted already: what is left is the run's own cost over the store.
    result.runPromoteIdle = summary(timeCommand(args('run', 'promote', '--json'), env, work.dir, { runs: 1 }));
    log(`  run promote with nothing to do: ${Math.round(result.runPromoteIdle.medianMs)} ms`);
    return result;
  } finally {
    work.cleanup();
  }
}

/**
 * SPEC §9's listing figure, per proposal: `list --state confirmed --json` on a store of `size`
 * proposals that are all confirmed, so every one is printed. First — no `<store>/.index/`, as
 * after a bulk import, so the command reads every file (3 runs) — and warm (5 runs, median).
 */
export function measureList(size, { log = () => {} } = {}) {
  const work = scratch('pipeline-bench-list-');
  try {
    const env = benchEnv(work.dir);
    const store = path.join(work.dir, 'store');
    writeStore(store, size, size);
    warmConfigCache(env, work.dir);
    const args = ['--store', store, 'list', '--state', 'confirmed', '--json'];
    const first = timeCommand(args, env, work.dir, { runs: 5, before: () => dropStatusIndex(store) });
    const warm = timeCommand(args, env, work.dir, { runs: 5 });
    const listed = JSON.parse(warm.last.stdout());
    if (listed.length !== size) throw new Error(`list printed ${listed.length} proposals, expected ${size}`);
    log(`  list of ${size} confirmed: first ${Math.round(first.medianMs)} ms, warm ${Math.round(warm.medianMs)} ms`);
    return { size, first: summary(first), warm: summary(warm) };
  } finally {
    work.cleanup();
  }
}

/** `pipeline status` on a small store from a cold process: with the config cache, and the very first run. */
export function measureColdStart({ runs = 9 } = {}) {
  const work = scratch('pipeline-bench-cold-');
  try {
    const env = benchEnv(work.dir);
    const store = path.join(work.dir, 'store');
    writeStore(store, 20, 5);
    const cacheDir = env.PIPELINE_CONFIG_CACHE;
    const noCache = timeCommand(['--store', store, 'status'], env, work.dir, { runs: 3, before: () => rmSync(cacheDir, { recursive: true, force: true }) });
    const cached = timeCommand(['--store', store, 'status'], env, work.dir, { runs });
    const version = timeCommand(['--version'], env, work.dir, { runs });
    // The same `status` with every variable of the caller's environment (see benchEnv).
    const dropped = droppedNodeVariables();
    const callerEnv = timeCommand(['--store', store, 'status'], { ...process.env, ...env }, work.dir, { runs });
    return { status: summary(cached), statusNoConfigCache: summary(noCache), version: summary(version), statusCallerEnv: { ...summary(callerEnv), dropped } };
  } finally {
    work.cleanup();
  }
}
