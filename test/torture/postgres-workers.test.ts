/**
 * SPEC §11 reliability: 4 worker processes (`pipeline run judge`) on one PostgreSQL database judge
 * 2,000 proposals with slow command judges; one worker is SIGKILLed mid-run and restarted. Every
 * proposal is judged exactly once (one verdict row each in the audit log), nothing is lost, and the
 * killed worker's leased proposals are taken over once its leases expire.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadPipeline } from '../../engine/config/load.js';
import { Engine } from '../../engine/engine.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { MemoryStore } from '../../engine/store/memory-store.js';
import { openStore, storeLayout } from '../../engine/store/open.js';
import type { AuditRow, Dumped, Store } from '../../engine/store/types.js';
import { copyPipeline, proposalInput } from '../helpers.js';
import { freshSchemaUrl, PG_URL } from '../pg/database.js';
import { sleep, start, storeEnv, type Finished } from './harness.js';

const PROPOSALS = 2000;
const WORKERS = 4;

/** The shipped pipeline with both judges a slow command (`sh`: sleep, then a passing verdict) and a 3 s lease. */
function slowPipeline(): string {
  const dir = copyPipeline();
  const verdict = path.join(dir, 'verdict.json');
  writeFileSync(
    verdict,
    JSON.stringify({ score: 0.9, passed: true, criterion_scores: { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 1 } }),
  );
  const main = path.join(dir, 'pipeline.yaml');
  const yaml = readFileSync(main, 'utf8')
    .replace(
      'providers:\n',
      `providers:\n  slow:\n    kind: command\n    command: "sh -c 'sleep 0.05; cat ${verdict}'"\n    paid: false\n    concurrency: 64\n`,
    )
    .replace(/defaults:\n/, 'defaults:\n  claim_ttl: 3s\n');
  writeFileSync(main, yaml);
  const judge = path.join(dir, 'stages', 'judge.yaml');
  writeFileSync(
    judge,
    readFileSync(judge, 'utf8').replace('standard: standard-checks', 'standard: slow').replace('adversarial: adversarial-checks', 'adversarial: slow'),
  );
  return dir;
}

/** `count` confirmed proposals, made once through the engine and loaded into the database in one go. */
async function confirmedDatabase(dir: string, url: string, count: number): Promise<{ store: Store; ids: string[] }> {
  const pipeline = await loadPipeline(dir, { ...process.env, PIPELINE_CONFIG_CACHE: 'off' }, { useCache: false });
  const scratch = new MemoryStore(storeLayout(pipeline));
  const engine = new Engine({ pipeline, store: scratch });
  const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
  if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
  await runReviewCommand(engine, findReviewCommand(pipeline, 'confirm')!, created.id, { visibility: 'org' }, 'cli');
  const [templateId, templateKey] = [created.id, (created.proposal as { artifact_id: string }).artifact_id];
  const template: Dumped[] = [];
  for await (const item of scratch.dump()) template.push(item);
  const ids = Array.from({ length: count }, () => engine.ids());
  async function* items(): AsyncIterable<Dumped> {
    for (const [n, id] of ids.entries()) {
      const key = `01JBQ${String(n).padStart(21, '0')}`;
      for (const item of template) {
        const text = JSON.stringify(item).split(templateId).join(id).split(templateKey).join(key);
        const copy = JSON.parse(text) as Dumped;
        if (copy.kind === 'proposal') yield { ...copy, key };
        else if (copy.kind === 'audit') yield copy;
      }
    }
  }
  const store = openStore(pipeline, url);
  await store.load(items());
  return { store, ids };
}

async function judgedCount(store: Store): Promise<number> {
  const { counts } = await store.counts(['approved', 'rejected']);
  return (counts['approved'] ?? 0) + (counts['rejected'] ?? 0);
}

const stores: Store[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

describe.skipIf(!PG_URL)('many workers on one PostgreSQL store', () => {
  it('judges 2,000 proposals exactly once with 4 workers, one of them killed mid-run and restarted', async () => {
    const dir = slowPipeline();
    const url = freshSchemaUrl('workers');
    const { store, ids } = await confirmedDatabase(dir, url, PROPOSALS);
    stores.push(store);
    const env = storeEnv(url);
    const args = ['--dir', dir, 'run', 'judge', '--yes', '--json', '--concurrency', '8'];
    const workers = Array.from({ length: WORKERS }, () => start(args, env));
    // Kill one worker once the run is well under way, while it holds leases on work in flight.
    while ((await judgedCount(store)) < PROPOSALS / 5) await sleep(50);
    workers[0]!.child.kill('SIGKILL');
    const killed = await workers[0]!.done;
    expect(killed.signal, `${killed.code} ${killed.stdout} ${killed.stderr}`).toBe('SIGKILL');
    const restarted = start(args, env);
    const results: Finished[] = await Promise.all([...workers.slice(1).map((worker) => worker.done), restarted.done]);
    for (const result of results) {
      expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
      // A worker that ends while another still holds work says so and exits 2 (SPEC §11).
      expect([0, 2], result.stderr).toContain(result.code);
    }
    // Whatever was still leased by the killed worker at the others' end is finished by now, or by this run.
    const last = await start(args, env).done;
    expect(last.code, last.stderr).toBe(0);

    expect(await judgedCount(store)).toBe(PROPOSALS);
    const verdicts = new Map<string, number>();
    const promotions = new Map<string, number>();
    for await (const row of store.audit() as AsyncIterable<AuditRow>) {
      if (row.event === 'approve' || row.event === 'reject') verdicts.set(row.id, (verdicts.get(row.id) ?? 0) + 1);
      if (row.event === 'promote') promotions.set(row.id, (promotions.get(row.id) ?? 0) + 1);
    }
    expect(ids.filter((id) => verdicts.get(id) !== 1)).toEqual([]);
    expect(ids.filter((id) => promotions.get(id) !== 1)).toEqual([]);
    let entries = 0;
    for await (const _id of store.entries('approved')) entries++;
    expect(entries).toBe(PROPOSALS);
    // The summaries add up: every proposal was counted as judged by exactly one worker.
    const judgedBy = [...results, last]
      .filter((result) => result.code !== null)
      .map((result) => JSON.parse(result.stdout) as { counts: Record<string, number> });
    const counted = judgedBy.reduce((sum, summary) => sum + (summary.counts['approved'] ?? 0) + (summary.counts['rejected'] ?? 0), 0);
    expect(counted).toBeLessThanOrEqual(PROPOSALS);
    expect(counted).toBeGreaterThan(PROPOSALS / 2);
  }, 240_000);
});
