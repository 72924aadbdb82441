/**
 * The crash points a random SIGKILL only hits sometimes, hit exactly (SPEC §4, §5.6, §9): a run
 * killed at each step of a commit (`PIPELINE_FAILPOINT`) — after its journal entry, its
 * document, its ledger row — and a claim, a takeover marker and a commit lock left behind by
 * killed processes. In each case the next real command finishes the work, once, and nothing
 * stays stuck.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditById, confirmedStore, readProposals, readRows, run, storeEnv } from './harness.js';

/** The pid of a process that has exited: what a SIGKILLed owner looks like. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

/** A store of confirmed proposals at org visibility: the offline jury approves some and rejects others. */
async function judgedStore(count = 4) {
  const t = await confirmedStore(count, ['org']);
  return { ...t, env: storeEnv(t.storeDir) };
}

const rowsOf = (storeDir: string, id: string) => auditById(storeDir).get(id) ?? [];

describe('crash points of a verdict and its promotion (one commit)', () => {
  for (const step of ['journaled', 'document', 'ledger']) {
    it(`a run killed after the ${step} step of a commit leaves it to the next run, which finishes it once`, async () => {
      // More proposals than the commits a run at concurrency 1 may have in flight (4), so the bound below can fail.
      const t = await judgedStore(8);
      const killed = await run(['run', 'judge', '--yes', '--concurrency', '1'], { ...t.env, PIPELINE_FAILPOINT: step });
      expect(killed.signal).toBe('SIGKILL');
      const next = await run(['run', 'judge', '--yes', '--json'], t.env);
      expect(next.code, next.stderr).toBe(0);
      const proposals = readProposals(t.storeDir);
      const approved = t.ids.filter((id) => proposals.get(id)!['status'] === 'approved');
      const rejected = t.ids.filter((id) => proposals.get(id)!['status'] === 'rejected');
      expect(approved.length + rejected.length).toBe(t.ids.length);
      for (const id of t.ids) {
        const rows = rowsOf(t.storeDir, id);
        expect(
          rows.filter((row) => row['event'] === 'approve' || row['event'] === 'reject'),
          id,
        ).toHaveLength(1);
        expect(
          rows.filter((row) => row['event'] === 'promote'),
          id,
        ).toHaveLength(1);
        expect(proposals.get(id)!['promoted_at'], id).toEqual(expect.any(String));
      }
      // The commits in flight when the run was killed were interrupted — the one at the failpoint,
      // and up to the 4 × concurrency a run lets commit past their slot — and their rows, and only
      // those, say they were added later: all of a commit's rows (its verdict and its promotion), or none.
      const repaired = [...auditById(t.storeDir).values()].flat().filter((row) => row['repaired'] === true);
      expect(repaired.map((row) => row['event']).sort()).toEqual(expect.arrayContaining(['promote']));
      const interrupted = new Set(repaired.map((row) => row['id']));
      expect(interrupted.size).toBeGreaterThanOrEqual(1);
      expect(interrupted.size).toBeLessThanOrEqual(4 * 1);
      for (const id of t.ids) {
        const decided = rowsOf(t.storeDir, id).filter((row) => ['approve', 'reject', 'promote'].includes(String(row['event'])));
        expect(
          decided.map((row) => row['repaired'] === true),
          id,
        ).toEqual(decided.map(() => interrupted.has(id)));
      }
      // The entries are the approved proposals'. Temp files the killed run had created for commits
      // in flight may be there too (dot-names, never listed): the sweep of a run leaves a dead
      // writer's temp file until it is 10 s old (it may be another host's), and removes it then.
      const names = readdirSync(path.join(t.storeDir, 'approved'));
      expect(names.filter((name) => !name.startsWith('.')).sort()).toEqual(approved.map((id) => `${id}.json`).sort());
      for (const name of names.filter((each) => each.startsWith('.'))) expect(name).toMatch(/^\.[0-9A-Z]{26}\.json\.\d+\.[0-9a-z]+\.tmp$/);
      expect(
        readRows(path.join(t.storeDir, 'declined.jsonl'))
          .rows.map((row) => row['id'])
          .sort(),
      ).toEqual(rejected.sort());
    }, 60_000);
  }
});

describe('coordination files left by killed processes', () => {
  it('a claim and a takeover marker of killed runs do not hold a proposal back from the next run', async () => {
    const t = await confirmedStore(3, ['org']);
    const claims = path.join(t.storeDir, '.claims', 'judge');
    mkdirSync(claims, { recursive: true });
    const [held, marked] = t.ids;
    const owner = (pid: number) => JSON.stringify({ pid, host: os.hostname(), token: `killed${pid}` });
    writeFileSync(path.join(claims, held!), owner(deadPid()));
    // Killed in the middle of taking over a dead run's claim: the marker names another dead taker.
    writeFileSync(path.join(claims, marked!), owner(deadPid()));
    writeFileSync(path.join(claims, `${marked}.takeover`), String(deadPid()));
    const result = await run(['run', 'judge', '--yes', '--json'], storeEnv(t.storeDir));
    expect(result.code).toBe(0);
    const proposals = readProposals(t.storeDir);
    for (const id of t.ids) expect(['approved', 'rejected'], id).toContain(proposals.get(id)!['status']);
  }, 60_000);

  it('a commit lock of a killed process does not block a review command', async () => {
    const t = await confirmedStore(1, ['org']);
    const [id] = t.ids;
    mkdirSync(path.join(t.storeDir, '.locks'), { recursive: true });
    writeFileSync(path.join(t.storeDir, '.locks', `${id}.lock`), JSON.stringify({ pid: deadPid(), host: os.hostname(), token: 'killed' }));
    const result = await run(['unconfirm', id!], storeEnv(t.storeDir));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(readProposals(t.storeDir).get(id!)!['status']).toBe('pending');
    expect(readdirSync(path.join(t.storeDir, '.locks')).filter((name) => name.startsWith(id!))).toEqual([]);
  }, 60_000);
});
