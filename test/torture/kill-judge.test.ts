/**
 * SPEC §9 reliability: a `pipeline run judge` killed with SIGKILL at random points leaves no
 * corrupt or missing proposal, and its re-run finishes the work with no proposal judged twice in
 * the audit log. The kills land at random moments of the real binary's life — during start-up
 * and in the middle of commits — and between kills the store is damaged further the way a power
 * cut would: a torn last line in events.jsonl and in declined.jsonl.
 */
import { appendFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { auditById, confirmedStore, readProposals, readRows, run, sleep, start, storeEnv, verdictRows } from './harness.js';

const PROPOSALS = 300;
const ROUNDS = 16;

/** A seeded pseudo-random stream (mulberry32): the kill moments differ, the test's shape does not. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);

async function until(condition: () => boolean, limitMs: number): Promise<void> {
  const start = Date.now();
  while (!condition() && Date.now() - start < limitMs) await sleep(5);
}

it('survives 16 SIGKILLs of a judge run and torn log lines: nothing corrupt or missing, every proposal judged exactly once', async () => {
  const t = await confirmedStore(PROPOSALS);
  const env = storeEnv(t.storeDir);
  const eventsFile = path.join(t.storeDir, 'events.jsonl');
  const declinedFile = path.join(t.storeDir, 'declined.jsonl');
  const random = seeded(9);
  const torn = { events: '{"at":"2026-11-01T12:00:00Z","id":"01JBQ', declined: '{"artifact_id":"01JBQ000' };
  let killed = 0;
  let declinedTorn = false;

  for (let round = 0; round < ROUNDS; round++) {
    const before = sizeOf(eventsFile);
    const { child, done } = start(['run', 'judge', '--yes', '--concurrency', '4'], env);
    let exited = false;
    void done.then(() => (exited = true));
    // Odd rounds: any moment from start-up on. Even rounds: just after the run's first commit.
    if (round % 2) await sleep(random() * 400);
    else await until(() => exited || sizeOf(eventsFile) > before, 20_000);
    await sleep(random() * 30);
    child.kill('SIGKILL');
    if ((await done).signal === 'SIGKILL') killed++;

    // After every kill: each proposal is still there and parses.
    expect([...readProposals(t.storeDir).keys()].sort()).toEqual([...t.ids].sort());
    if (round === 4) appendFileSync(eventsFile, torn.events);
    if (round >= 8 && !declinedTorn && existsSync(declinedFile)) {
      appendFileSync(declinedFile, torn.declined);
      declinedTorn = true;
    }
  }
  expect(killed).toBeGreaterThanOrEqual(ROUNDS / 2);

  const judge = await run(['run', 'judge', '--yes', '--json'], env);
  expect(judge.stderr).not.toMatch(/internal error|\n\s+at /);
  expect(judge.code).toBe(0);
  // A run killed between a verdict and its promotion leaves the promotion to `run promote`.
  const promote = await run(['run', 'promote', '--json'], env);
  expect(promote.code).toBe(0);
  expect(JSON.parse(promote.stdout).refused).toEqual([]);

  const proposals = readProposals(t.storeDir);
  expect([...proposals.keys()].sort()).toEqual([...t.ids].sort());
  const audit = auditById(t.storeDir);
  const approved: string[] = [];
  const rejected: string[] = [];
  for (const id of t.ids) {
    const proposal = proposals.get(id)!;
    expect(['approved', 'rejected'], id).toContain(proposal['status']);
    expect(proposal['verdict']?.passed, id).toBe(proposal['status'] === 'approved');
    expect(proposal['promoted_at'], id).toEqual(expect.any(String));
    (proposal['status'] === 'approved' ? approved : rejected).push(id);
    const rows = audit.get(id) ?? [];
    // Judged once: one verdict row, one promotion row, and the log ends where the file is.
    expect(
      verdictRows(rows).map((row) => row['to']),
      id,
    ).toEqual([proposal['status']]);
    expect(
      rows.filter((row) => row['event'] === 'promote'),
      id,
    ).toHaveLength(1);
    expect(rows.at(-1)?.['to'], id).toBe(proposal['status']);
  }

  // The pool holds exactly the approved proposals; the ledger one row per rejected proposal.
  const pool = readdirSync(path.join(t.storeDir, 'approved'))
    .filter((name) => name.endsWith('.json'))
    .map((name) => name.slice(0, 26));
  expect(pool.sort()).toEqual(approved.sort());
  const declined = readRows(declinedFile);
  expect(declined.rows.map((row) => row['id']).sort()).toEqual(rejected.sort());

  // The torn lines are still there, each on its own line: no row was glued to one.
  expect(readRows(eventsFile).torn).toEqual([torn.events]);
  expect(declined.torn).toEqual(declinedTorn ? [torn.declined] : []);

  const status = await run(['status', '--json'], env);
  expect(status.stderr).toBe('');
  expect(JSON.parse(status.stdout)).toEqual({ pending: 0, confirmed: 0, passed: 0, approved: approved.length, rejected: rejected.length, archived: 0 });
}, 120_000);
