/**
 * SPEC §4: claims are never observable half-written, so a run started right after a SIGKILL
 * never mistakes a dead run's claim for a live one; an owner on another host holds by lease;
 * a run never exits 0 while it skipped work another run holds — it retries at the end, then
 * lists what is still held and exits 2.
 */
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTimeOf } from '../../engine/store/process-identity.js';
import { confirmedStore, readProposals, run, storeEnv } from './harness.js';

const judged = (storeDir: string, id: string) => ['approved', 'rejected'].includes(readProposals(storeDir).get(id)!['status']);

function claimsDir(storeDir: string): string {
  const dir = path.join(storeDir, '.claims', 'judge');
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('claims left behind and claims held', () => {
  it('takes an empty claim file (what a kill between create and write used to leave) at once, and judges it', async () => {
    const t = await confirmedStore(2, ['org']);
    writeFileSync(path.join(claimsDir(t.storeDir), t.ids[0]!), '');
    const result = await run(['run', 'judge', '--yes', '--json'], storeEnv(t.storeDir));
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).unjudged).toEqual([]);
    for (const id of t.ids) expect(judged(t.storeDir, id), id).toBe(true);
  }, 60_000);

  it('retries a proposal a live run holds, then lists it as left for a retry and exits 2', async () => {
    const t = await confirmedStore(2, ['org']);
    // The test process is alive: a claim naming it is a live run's claim.
    const live = { host: os.hostname(), pid: process.pid, start: startTimeOf(process.pid), nonce: 'other-run' };
    writeFileSync(path.join(claimsDir(t.storeDir), t.ids[0]!), JSON.stringify(live));
    const result = await run(['run', 'judge', '--yes', '--json'], storeEnv(t.storeDir));
    expect(result.code).toBe(2);
    const summary = JSON.parse(result.stdout);
    expect(summary.unjudged).toEqual([t.ids[0]]);
    expect(summary.counts['held_by_another_run']).toBe(1);
    expect(result.stderr).toContain(`${t.ids[0]}: another run still holds it`);
    expect(judged(t.storeDir, t.ids[0]!)).toBe(false);
    expect(judged(t.storeDir, t.ids[1]!)).toBe(true);
  }, 60_000);

  it('holds a claim of another host by lease: fresh, it is held; past the lease, it is taken over', async () => {
    const t = await confirmedStore(2, ['org']);
    const dir = claimsDir(t.storeDir);
    const remote = (nonce: string) => JSON.stringify({ host: 'another-host.invalid', pid: 1, start: 1, nonce });
    writeFileSync(path.join(dir, t.ids[0]!), remote('fresh'));
    writeFileSync(path.join(dir, t.ids[1]!), remote('expired'));
    const old = new Date(Date.now() - 6 * 60_000);
    utimesSync(path.join(dir, t.ids[1]!), old, old);
    const result = await run(['run', 'judge', '--yes', '--json'], storeEnv(t.storeDir));
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout).unjudged).toEqual([t.ids[0]]);
    expect(judged(t.storeDir, t.ids[1]!)).toBe(true);
  }, 60_000);
});
