/**
 * SPEC §5.8: counters are exact under concurrency. 8 processes of the real binary, each recording
 * 25 outcomes on one proposal, leave exactly 200 counted and 200 audit rows: a commit that lost
 * its compare-and-swap is decided again on the proposal as it is now, and retried until it lands.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { poolTest } from '../pool/helpers.js';
import { auditById, run, storeEnv } from './harness.js';

const PROCESSES = 8;
const EACH = 25;

describe('outcomes recorded by racing processes', () => {
  it('8 processes × 25 outcomes on one proposal: exactly 200 counted, 200 audit rows, every command exits 0', { timeout: 240_000 }, async () => {
    const t = await poolTest();
    const id = await t.inUse();
    const entry = readFileSync(path.join(t.storeDir, 'approved', `${id}.json`));
    const env = storeEnv(t.storeDir);
    // A first command fills the configuration cache, as any earlier command would have.
    expect((await run(['status'], env)).code).toBe(0);
    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: PROCESSES }, async (_, p) => {
        for (let i = 0; i < EACH; i++) {
          const result = (p + i) % 3 === 0 ? 'miss' : 'hit';
          const done = await run(['pool', 'outcome', id, result, '--consumer', `worker-${p}`, '--session', `s-${i}`], env);
          if (done.code !== 0) failures.push(`worker ${p}, outcome ${i}: exit ${done.code}: ${done.stderr.trim()}`);
        }
      }),
    );
    expect(failures).toEqual([]);
    let misses = 0;
    for (let p = 0; p < PROCESSES; p++) for (let i = 0; i < EACH; i++) if ((p + i) % 3 === 0) misses++;
    const proposal = JSON.parse(readFileSync(path.join(t.storeDir, 'proposals', `${id}.json`), 'utf8'));
    expect({ hits: proposal.hit_count, misses: proposal.miss_count }).toEqual({ hits: PROCESSES * EACH - misses, misses });
    const rows = (auditById(t.storeDir).get(id) ?? []).filter((row) => row['event'] === 'record_outcome');
    expect(rows).toHaveLength(PROCESSES * EACH);
    // Each command's own arguments are in its own row: no row was written twice, none lost.
    expect(new Set(rows.map((row) => JSON.stringify(row['args']))).size).toBe(PROCESSES * EACH);
    expect(readFileSync(path.join(t.storeDir, 'approved', `${id}.json`)).equals(entry)).toBe(true);
  });
});
