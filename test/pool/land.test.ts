/**
 * The retry behind exact counters (SPEC §5.8): a commit that lost its compare-and-swap is decided
 * again on the proposal as it is now, after a random wait, until it lands — bounded — and when it
 * can no longer land (the proposal left the pool meanwhile) the refusal names the status.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Pipeline } from '../../engine/config/load.js';
import { Engine } from '../../engine/engine.js';
import { executePrune, landEvent, poolOf, recordOutcome } from '../../engine/pool/pool.js';
import { MemoryStore } from '../../engine/store/memory-store.js';
import { storeLayout } from '../../engine/store/open.js';
import type { Change, CommitResult } from '../../engine/store/types.js';
import { fixedClock, shippedPipeline } from '../helpers.js';

let pipeline: Pipeline;
beforeAll(async () => {
  pipeline = await shippedPipeline();
});

const ID = '01JC0000000000000000000001';

/** A store where another writer commits first `losses` times: before each of our commits, it counts a hit. */
class ContendedStore extends MemoryStore {
  losses = 0;
  /** Called before each lost race, as the other writer's change. */
  rival: (proposal: Record<string, unknown>) => Record<string, unknown> = (proposal) => ({ ...proposal, hit_count: Number(proposal['hit_count'] ?? 0) + 1 });
  override async commit(change: Change): Promise<CommitResult> {
    if (this.losses > 0 && change.audit[0]?.event !== 'rival') {
      this.losses--;
      const read = await this.read(change.id);
      if (read.kind !== 'found') throw new Error('missing');
      const next = this.rival(read.stored.proposal);
      const audit = [{ at: 'x', id: change.id, event: 'rival', from: 'approved', to: String(next['status']), stage: 't', actor: 'cli' as const }];
      await super.commit({ id: change.id, version: read.stored.version, next, audit });
    }
    return super.commit(change);
  }
}

async function setUp(): Promise<{ store: ContendedStore; engine: Engine; waits: number[] }> {
  const store = new ContendedStore(storeLayout(pipeline));
  const proposal = { id: ID, artifact_id: 'a', status: 'approved', promoted_at: '2026-11-01T00:00:00Z' };
  await store.create({ proposal, key: 'a', audit: { at: 'x', id: ID, event: 'create', from: null, to: 'approved', stage: 't', actor: 'cli' } });
  return { store, engine: new Engine({ pipeline, store, clock: fixedClock() }), waits: [] };
}

describe('landing an outcome under contention', () => {
  it('retries a lost race on the proposal as it is now, with random waits, until it lands; no count is lost', async () => {
    const { store, engine, waits } = await setUp();
    store.losses = 5;
    const outcome = await recordOutcome(engine, poolOf(pipeline)!, ID, 'hit', { land: { sleep: async (ms) => void waits.push(ms), random: () => 0.5 } });
    expect(outcome).toMatchObject({ kind: 'committed' });
    expect(outcome.kind === 'committed' && outcome.proposal['hit_count']).toBe(6);
    expect(waits).toHaveLength(5);
    expect(waits[4]).toBeGreaterThan(waits[0]!);
  });

  it('gives up after a bounded number of lost races, writing nothing and naming the status', async () => {
    const { store, engine } = await setUp();
    store.losses = 1000;
    const read = await engine.read(ID);
    if (!read.ok) throw new Error('missing');
    const outcome = await landEvent(engine, read.stored, 'record_outcome', { result: 'miss' }, { attempts: 4, sleep: async () => {} });
    const message = `${ID} (approved): other writers kept changing it; record_outcome lost 4 races and was not recorded — retry`;
    expect(outcome).toMatchObject({ kind: 'refused', code: 'changed', message });
    const after = await store.read(ID);
    expect(after.kind === 'found' && after.stored.proposal['miss_count']).toBeUndefined();
  });

  it('refuses, naming the new status, when the proposal was archived while it retried', async () => {
    const { store, engine } = await setUp();
    store.losses = 1;
    store.rival = (proposal) => ({ ...proposal, status: 'archived' });
    const outcome = await recordOutcome(engine, poolOf(pipeline)!, ID, 'hit', { land: { sleep: async () => {} } });
    expect(outcome).toMatchObject({ kind: 'refused', message: `${ID} is archived; record_outcome applies only to approved proposals` });
  });

  it('prune leaves in use a candidate whose outcomes changed before its archive landed, and says so', async () => {
    const { store, engine } = await setUp();
    const read = await store.read(ID);
    if (read.kind !== 'found') throw new Error('missing');
    // A proposal in use with its pool entry: 5 misses, a prune candidate.
    const put = await store.commit({
      id: ID,
      version: read.stored.version,
      next: { ...read.stored.proposal, miss_count: 5 },
      audit: [{ at: 'x', id: ID, event: 'rival', from: 'approved', to: 'approved', stage: 't', actor: 'cli' }],
      entries: [{ op: 'put', collection: 'approved', id: ID, entry: { id: ID } }],
    });
    expect(put.ok).toBe(true);
    store.losses = 1;
    store.rival = (proposal) => ({ ...proposal, hit_count: 4 });
    const run = await executePrune(engine, poolOf(pipeline)!, 3, { land: { sleep: async () => {} } });
    expect(run.archived).toEqual([]);
    expect(run.refused).toEqual([{ id: ID, message: `${ID} (approved): no longer a prune candidate; left in use` }]);
    expect(await store.readEntry('approved', ID)).toEqual({ id: ID });
  });
});
