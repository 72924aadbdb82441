/**
 * SPEC §4 and §9: two runs of the same stage never process the same proposal. Two and four real
 * `pipeline run judge` processes share one store — started together, and started one after
 * another while the earlier ones are busy — and between them every proposal is judged and
 * promoted exactly once: by the summaries, by the audit log, by the pool and by the ledger.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditById, confirmedStore, readProposals, readRows, sleep, start, storeEnv, verdictRows, type Finished } from './harness.js';

const PROPOSALS = 160;

async function concurrentRuns(processes: number, staggerMs: number) {
  const t = await confirmedStore(PROPOSALS);
  const env = storeEnv(t.storeDir);
  const runs: Promise<Finished>[] = [];
  for (let i = 0; i < processes; i++) {
    if (i && staggerMs) await sleep(staggerMs);
    runs.push(start(['run', 'judge', '--yes', '--json', '--concurrency', '8'], env).done);
  }
  return { t, results: await Promise.all(runs) };
}

/** One verdict row, for the status the proposal has, and one promote row. */
function expectVerdictAndPromotionOnce(id: string, status: string, rows: readonly Record<string, unknown>[]): void {
  expect(
    verdictRows(rows).map((row) => row['to']),
    id,
  ).toEqual([status]);
  expect(
    rows.filter((row) => row['event'] === 'promote'),
    id,
  ).toHaveLength(1);
}

function expectEachJudgedOnce({ t, results }: Awaited<ReturnType<typeof concurrentRuns>>): void {
  for (const result of results) {
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(result.code).toBe(0);
  }
  // Every proposal is counted by exactly one of the runs.
  const summaries = results.map((result) => JSON.parse(result.stdout) as { counts: Record<string, number>; unjudged: string[]; refused: string[] });
  const judged = summaries.reduce((sum, summary) => sum + summary.counts['approved']! + summary.counts['rejected']!, 0);
  expect(judged).toBe(PROPOSALS);
  expect(summaries.flatMap((summary) => [...summary.unjudged, ...summary.refused])).toEqual([]);

  const proposals = readProposals(t.storeDir);
  const audit = auditById(t.storeDir);
  const approved: string[] = [];
  const rejected: string[] = [];
  for (const id of t.ids) {
    const status = proposals.get(id)!['status'] as string;
    (status === 'approved' ? approved : status === 'rejected' ? rejected : []).push(id);
    const rows = audit.get(id) ?? [];
    expectVerdictAndPromotionOnce(id, status, rows);
    expect(rows.at(-1)?.['to'], id).toBe(status);
  }
  expect(approved.length + rejected.length).toBe(PROPOSALS);
  const pool = readdirSync(path.join(t.storeDir, 'approved')).map((name) => name.slice(0, 26));
  expect(pool.sort()).toEqual(approved.sort());
  expect(
    readRows(path.join(t.storeDir, 'declined.jsonl'))
      .rows.map((row) => row['id'])
      .sort(),
  ).toEqual(rejected.sort());
}

describe('concurrent judge runs on one store', () => {
  it('two runs started together judge and promote every proposal exactly once', async () => {
    expectEachJudgedOnce(await concurrentRuns(2, 0));
  }, 60_000);

  it('four runs started together judge and promote every proposal exactly once', async () => {
    expectEachJudgedOnce(await concurrentRuns(4, 0));
  }, 60_000);

  it('four runs started one after another, each while the others are busy, judge every proposal exactly once', async () => {
    expectEachJudgedOnce(await concurrentRuns(4, 250));
  }, 60_000);
});

describe('a run that dies while another runs', () => {
  it('leaves nothing behind: the survivor finishes its half-applied commits and takes over what it held, exit 0', async () => {
    const count = 400;
    const t = await confirmedStore(count);
    const env = storeEnv(t.storeDir);
    const a = start(['run', 'judge', '--yes', '--json', '--concurrency', '4'], env);
    // Kill the first run mid-way, once the second is running beside it.
    for (let waited = 0; verdictRows(readRows(path.join(t.storeDir, 'events.jsonl')).rows).length < 40 && waited < 20_000; waited += 20) await sleep(20);
    const b = start(['run', 'judge', '--yes', '--json', '--concurrency', '4'], env);
    await sleep(500);
    a.child.kill('SIGKILL');
    await a.done;
    const survivor = await b.done;
    expect(survivor.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(survivor.code, survivor.stderr).toBe(0);
    const proposals = readProposals(t.storeDir);
    const audit = auditById(t.storeDir);
    for (const id of t.ids) {
      const status = proposals.get(id)!['status'] as string;
      expect(['approved', 'rejected'], id).toContain(status);
      expectVerdictAndPromotionOnce(id, status, audit.get(id) ?? []);
    }
    const approved = t.ids.filter((id) => proposals.get(id)!['status'] === 'approved');
    // (The killed run's temp files may still be there: a later run sweeps them.)
    expect(
      readdirSync(path.join(t.storeDir, 'approved'))
        .filter((name) => /^[0-9A-Z]{26}\.json$/.test(name))
        .map((name) => name.slice(0, 26))
        .sort(),
    ).toEqual(approved.sort());
    expect(readRows(path.join(t.storeDir, 'declined.jsonl')).rows).toHaveLength(count - approved.length);
  }, 90_000);
});
