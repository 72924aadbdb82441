/**
 * SPEC §9 via §5.8: `pool top` keeps a derived index, so it does not read every proposal; the
 * index follows the store's changes, is rebuilt when the store cannot tell, and what `top` prints
 * is re-read (a stale row is ranked again). Runs on the in-memory store, counting reads.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Pipeline } from '../../engine/config/load.js';
import { Engine } from '../../engine/engine.js';
import type { PoolConfig } from '../../engine/pool/config.js';
import { EMPTY_COLUMNS, toColumns } from '../../engine/pool/columns.js';
import { decodeIndex, encodeIndex } from '../../engine/pool/index-bytes.js';
import { INDEX_FORMAT, PoolIndex } from '../../engine/pool/pool-index.js';
import { poolOf, top } from '../../engine/pool/pool.js';
import { rowOf } from '../../engine/pool/rows.js';
import { MemoryStore } from '../../engine/store/memory-store.js';
import { storeLayout } from '../../engine/store/open.js';
import type { AuditRow, ReadResult } from '../../engine/store/types.js';
import { candidate, fixedClock, shippedPipeline } from '../helpers.js';

let pipeline: Pipeline;
let pool: PoolConfig;
beforeAll(async () => {
  pipeline = await shippedPipeline();
  pool = poolOf(pipeline)!;
});

const NOW = Date.parse('2026-11-01T12:00:00Z');

/** A memory store that counts document reads (what "does not read every proposal" means). */
class CountingStore extends MemoryStore {
  reads = 0;
  override async read(id: string): Promise<ReadResult> {
    this.reads++;
    return super.read(id);
  }
}

const idOf = (n: number) => `01JC${String(n).padStart(22, '0')}`;

function approved(n: number, extra: Record<string, unknown> = {}) {
  const id = idOf(n);
  const stack = n % 2 ? ['vite'] : ['node'];
  return {
    id,
    artifact_id: `01JD${String(n).padStart(22, '0')}`,
    created_at: '2026-10-01T00:00:00Z',
    status: 'approved',
    candidate: candidate({ applies_to: { stack, scope: { kind: 'versioned', versions: { [stack[0]!]: '>=1' } }, file_patterns: [], task_kinds: [] } }),
    visibility: 'private',
    promoted_at: new Date(NOW - n * 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...extra,
  };
}

/** The audit row of a proposal written straight into the pool (tests only). */
const created = (id: string): AuditRow => ({ at: '2026-10-01T00:00:00Z', id, event: 'create', from: null, to: 'approved', stage: 'test', actor: 'cli' });

async function seeded(count: number): Promise<{ store: CountingStore; engine: Engine }> {
  const store = new CountingStore(storeLayout(pipeline));
  for (let n = 1; n <= count; n++) {
    const proposal = approved(n);
    await store.create({ proposal, key: proposal.artifact_id, audit: created(proposal.id) });
  }
  return { store, engine: new Engine({ pipeline, store, clock: fixedClock() }) };
}

describe('the pool index', () => {
  it('is built once from a listing; a later top reads only the K rows it prints', async () => {
    const { store, engine } = await seeded(200);
    const first = await top(engine, pool, {}, 3, NOW);
    expect(first.rebuilt).toBe(true);
    expect(first.rows.map((row) => row.scored.row.id)).toEqual([idOf(1), idOf(2), idOf(3)]);
    store.reads = 0;
    const second = await top(engine, pool, { stack: ['vite'] }, 3, NOW);
    expect(second.rebuilt).toBe(false);
    expect(second.rows.map((row) => row.scored.row.id)).toEqual([idOf(1), idOf(3), idOf(5)]);
    expect(store.reads).toBe(3);
  });

  it('follows the store: an outcome committed since is re-read, and only it', async () => {
    const { store, engine } = await seeded(50);
    await top(engine, pool, {}, 3, NOW);
    const read = await engine.read(idOf(40));
    if (!read.ok) throw new Error('missing');
    const outcome = await engine.applyTo(read.stored, 'record_outcome', { result: 'hit' }, { stage: 'pool', actor: 'cli' });
    expect(outcome.kind).toBe('committed');
    for (let i = 0; i < 3; i++) {
      const again = (await store.read(idOf(40))) as Extract<ReadResult, { kind: 'found' }>;
      await engine.applyTo(again.stored, 'record_outcome', { result: 'hit' }, { stage: 'pool', actor: 'cli' });
    }
    store.reads = 0;
    const { index } = await PoolIndex.open(store, pool);
    expect(store.reads).toBe(1);
    expect(index.get(idOf(40))?.hits).toBe(4);
  });

  it('drops a proposal that left the pool state, and adds one that entered it', async () => {
    const { store, engine } = await seeded(5);
    await top(engine, pool, {}, 5, NOW);
    const entering = approved(9);
    await store.create({ proposal: entering, key: entering.artifact_id, audit: created(entering.id) });
    const leaving = await store.read(idOf(2));
    if (leaving.kind !== 'found') throw new Error('missing');
    const archived = { ...leaving.stored.proposal, status: 'archived' };
    const audit: AuditRow[] = [{ at: 'x', id: idOf(2), event: 'archive', from: 'approved', to: 'archived', stage: 't', actor: 'cli' }];
    await store.commit({ id: idOf(2), version: leaving.stored.version, next: archived, audit });
    const { index, rebuilt } = await PoolIndex.open(store, pool);
    expect(rebuilt).toBe(false);
    expect([...index.rows()].map((row) => row.id).sort()).toEqual([idOf(1), idOf(3), idOf(4), idOf(5), idOf(9)]);
  });

  it('is rebuilt when the store cannot tell what changed, or when asked', async () => {
    const { store, engine } = await seeded(5);
    await top(engine, pool, {}, 3, NOW);
    expect((await PoolIndex.open(store, pool)).rebuilt).toBe(false);
    expect((await PoolIndex.open(store, pool, { rebuild: true })).rebuilt).toBe(true);
    const keys = [...(store as unknown as { shared: { cacheBytes: Map<string, Uint8Array> } }).shared.cacheBytes.keys()].filter((key) => key.endsWith(':base'));
    expect(keys).toHaveLength(1);
    await store.cache.putBytes(keys[0]!, encodeIndex({ v: INDEX_FORMAT, nonce: 'n', cursor: 'not a cursor' }, EMPTY_COLUMNS));
    const again = await PoolIndex.open(store, pool);
    expect(again.rebuilt).toBe(true);
    expect([...again.index.rows()]).toHaveLength(5);
  });

  it('settles however many rows were edited by hand: past a bound, it ranks from a listing', async () => {
    const { store, engine } = await seeded(300);
    await top(engine, pool, {}, 1, NOW);
    // By hand, with no commits: each of the 299 newest gets older than the next, so the index
    // offers a stale row first again and again (one a round) — more rounds than the bound.
    for (let n = 1; n < 300; n++) store.putRaw(idOf(n), `${JSON.stringify(approved(600 - n), null, 2)}\n`.replace(idOf(600 - n), idOf(n)));
    const result = await top(engine, pool, {}, 1, NOW);
    expect(result.rows.map((row) => row.scored.row.id)).toEqual([idOf(300)]);
    expect(result.rebuilt).toBe(true);
  });

  it('reads no delta larger than a delta is ever written', async () => {
    const { store, engine } = await seeded(5);
    await top(engine, pool, {}, 3, NOW);
    const bytes = (store as unknown as { shared: { cacheBytes: Map<string, Uint8Array> } }).shared.cacheBytes;
    const baseKey = [...bytes.keys()].find((key) => key.endsWith(':base'))!;
    const { meta } = decodeIndex(bytes.get(baseKey)!)!;
    const rows = Array.from({ length: 2001 }, (_, i) => rowOf(idOf(1000 + i), approved(1000 + i), pool)!);
    const delta = (count: number) =>
      encodeIndex({ v: INDEX_FORMAT, base: meta['nonce'], cursor: meta['cursor'], removed: [] }, toColumns(rows.slice(0, count)));
    await store.cache.putBytes(baseKey.replace(/:base$/, ':delta'), delta(2001));
    expect([...(await PoolIndex.open(store, pool)).index.rows()]).toHaveLength(5);
    await store.cache.putBytes(baseKey.replace(/:base$/, ':delta'), delta(2000));
    expect([...(await PoolIndex.open(store, pool)).index.rows()]).toHaveLength(2005);
  });

  it('ranks again a row found stale when re-read (a proposal edited by hand)', async () => {
    const { store, engine } = await seeded(10);
    await top(engine, pool, {}, 2, NOW);
    // By hand: the newest one loses its promotion stamp, with no commit (the index cannot know).
    store.putRaw(idOf(1), `${JSON.stringify({ ...approved(1), promoted_at: undefined }, null, 2)}\n`);
    const result = await top(engine, pool, {}, 2, NOW);
    expect(result.rows.map((row) => row.scored.row.id)).toEqual([idOf(2), idOf(3)]);
  });
});

describe('index rows', () => {
  it('read absent counters as 0, and leave out what is not in the pool', () => {
    const row = rowOf(idOf(1), approved(1), pool)!;
    expect(row).toMatchObject({ hits: 0, misses: 0, stack: ['vite'] });
    expect(rowOf(idOf(1), approved(1, { hit_count: 'five', miss_count: -2 }), pool)).toMatchObject({ hits: 0, misses: 0 });
    expect(rowOf(idOf(1), approved(1, { status: 'archived' }), pool)).toBeUndefined();
    expect(rowOf(idOf(1), approved(1, { promoted_at: 'yesterday' }), pool)).toBeUndefined();
  });

  it('lower-case the stack names (they compare case-insensitively), once each', () => {
    const proposal = approved(1);
    (proposal.candidate['applies_to'] as Record<string, unknown>)['stack'] = ['Vite', 'VITE', 'Node.js'];
    expect(rowOf(idOf(1), proposal, pool)?.stack).toEqual(['vite', 'node.js']);
  });
});
