/**
 * The crash points a random SIGKILL only hits sometimes, set up exactly (SPEC §4, §5.6, §9): a
 * promotion killed after its pool entry or ledger row, or after its stamp but before the stamp's
 * audit row; a claim, a takeover marker and a commit lock left behind by killed processes. In
 * each case the next real command finishes the work, once, and nothing stays stuck.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditById, confirmedStore, readProposals, readRows, run, storeEnv } from './harness.js';

/** The pid of a process that has exited: what a SIGKILLed owner looks like. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

function dropRows(storeDir: string, drop: (row: Record<string, unknown>) => boolean): void {
  const file = path.join(storeDir, 'events.jsonl');
  const kept = readFileSync(file, 'utf8').split('\n').filter((line) => line && !drop(JSON.parse(line) as Record<string, unknown>));
  writeFileSync(file, `${kept.join('\n')}\n`);
}

/** A store whose proposals (one approved, one rejected) were judged and promoted by the binary. */
async function promotedStore() {
  const t = await confirmedStore(4, ['org']);
  const env = storeEnv(t.storeDir);
  expect((await run(['run', 'judge', '--yes'], env)).code).toBe(0);
  const proposals = readProposals(t.storeDir);
  const approved = t.ids.find((id) => proposals.get(id)!['status'] === 'approved')!;
  const rejected = t.ids.find((id) => proposals.get(id)!['status'] === 'rejected')!;
  return { ...t, env, approved, rejected };
}

const promoteRows = (storeDir: string, id: string) => (auditById(storeDir).get(id) ?? []).filter((row) => row['event'] === 'promote');

describe('crash points of promotion', () => {
  it('a stamp whose audit row was lost gets exactly one promote row from the next run', async () => {
    const t = await promotedStore();
    dropRows(t.storeDir, (row) => row['id'] === t.approved && row['event'] === 'promote');
    expect((await run(['run', 'promote'], t.env)).code).toBe(0);
    expect((await run(['promote', t.approved], t.env)).code).toBe(0);
    expect(promoteRows(t.storeDir, t.approved)).toHaveLength(1);
  }, 60_000);

  it('a pool entry or ledger row written before a lost stamp is finished once, never written twice', async () => {
    const t = await promotedStore();
    for (const id of [t.approved, t.rejected]) {
      const file = path.join(t.storeDir, 'proposals', `${id}.json`);
      const { promoted_at: _stamp, ...unstamped } = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeFileSync(file, `${JSON.stringify(unstamped, null, 2)}\n`);
      dropRows(t.storeDir, (row) => row['id'] === id && row['event'] === 'promote');
    }
    const entry = readFileSync(path.join(t.storeDir, 'approved', `${t.approved}.json`), 'utf8');
    expect((await run(['run', 'promote'], t.env)).code).toBe(0);
    expect((await run(['run', 'promote'], t.env)).code).toBe(0);
    const proposals = readProposals(t.storeDir);
    for (const id of [t.approved, t.rejected]) {
      expect(proposals.get(id)!['promoted_at'], id).toEqual(expect.any(String));
      expect(promoteRows(t.storeDir, id), id).toHaveLength(1);
    }
    expect(readFileSync(path.join(t.storeDir, 'approved', `${t.approved}.json`), 'utf8')).toBe(entry);
    expect(readRows(path.join(t.storeDir, 'declined.jsonl')).rows.filter((row) => row['id'] === t.rejected)).toHaveLength(1);
  }, 60_000);
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
