/**
 * The store contract: every backend (the file store today; SQLite or PostgreSQL tomorrow) must
 * pass this suite. Behaviour only — nothing here knows how a store keeps its data.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AuditRow, Store } from '../../engine/store/types.js';

export interface ContractHooks {
  /** A fresh, empty store that indexes the presence of `promoted_at`. */
  make(): Promise<Store>;
  /** A second handle on the same store (another process, in effect). */
  reopen(store: Store): Promise<Store>;
  /** Put raw garbage where a proposal with this id would be. */
  corrupt(store: Store, id: string, text: string): Promise<void>;
}

const ids = ['01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA2', '01ARZ3NDEKTSV4RRFFQ69G5FA3', '01ARZ3NDEKTSV4RRFFQ69G5FA4'];
const audit = (id: string, to: string, from: string | null = null, event = 'create'): AuditRow => ({ at: '2026-11-01T00:00:00Z', id, event, from, to, stage: 'test', actor: 'cli' });
const proposal = (id: string, status = 'pending', key = `key-${id}`) => ({ id, artifact_id: key, created_at: '2026-11-01T00:00:00Z', status, candidate: { claim: `claim ${id}` } });

export function storeContract(name: string, hooks: ContractHooks): void {
  describe(`store contract: ${name}`, () => {
    it('creates and reads back a proposal with a version', async () => {
      const store = await hooks.make();
      const created = await store.create(proposal(ids[0]!), `key-${ids[0]}`, audit(ids[0]!, 'pending'));
      expect(created.ok).toBe(true);
      const read = await store.read(ids[0]!);
      expect(read.kind).toBe('found');
      expect(read.kind === 'found' && read.stored.proposal).toEqual(proposal(ids[0]!));
      expect(read.kind === 'found' && created.ok && read.stored.version).toBe(created.ok ? created.version : '');
    });

    it('reports a missing proposal as missing', async () => {
      const store = await hooks.make();
      expect(await store.read(ids[1]!)).toEqual({ kind: 'missing' });
    });

    it('refuses a second proposal for a taken key, naming its owner', async () => {
      const store = await hooks.make();
      await store.create(proposal(ids[0]!, 'pending', 'same'), 'same', audit(ids[0]!, 'pending'));
      const second = await store.create(proposal(ids[1]!, 'pending', 'same'), 'same', audit(ids[1]!, 'pending'));
      expect(second).toEqual({ ok: false, reason: 'key_exists', existing: ids[0] });
      expect(await store.keyOwner('same')).toBe(ids[0]);
      expect(await store.keyOwner('other')).toBeUndefined();
      expect((await store.read(ids[1]!)).kind).toBe('missing');
    });

    it('commits only onto the version that was read', async () => {
      const store = await hooks.make();
      const created = await store.create(proposal(ids[0]!), 'k', audit(ids[0]!, 'pending'));
      const version = created.ok ? created.version : '';
      const first = await store.commit(ids[0]!, version, proposal(ids[0]!, 'confirmed', 'k'), audit(ids[0]!, 'confirmed', 'pending', 'confirm'), []);
      expect(first.ok).toBe(true);
      const stale = await store.commit(ids[0]!, version, proposal(ids[0]!, 'passed', 'k'), audit(ids[0]!, 'passed', 'pending', 'pass'), [{ ledger: 'passed', row: { id: ids[0] } }]);
      expect(stale).toEqual({ ok: false, reason: 'changed' });
      const read = await store.read(ids[0]!);
      expect(read.kind === 'found' && read.stored.proposal['status']).toBe('confirmed');
      expect(await store.readLedger('passed')).toEqual([]);
      expect((await store.readAudit()).map((row) => row.to)).toEqual(['pending', 'confirmed']);
    });

    it('lets exactly one of two racing commits of the same version win', async () => {
      const store = await hooks.make();
      const created = await store.create(proposal(ids[0]!), 'k', audit(ids[0]!, 'pending'));
      const version = created.ok ? created.version : '';
      const results = await Promise.all(['confirmed', 'passed', 'confirmed', 'passed'].map((status) => store.commit(ids[0]!, version, proposal(ids[0]!, status, 'k'), audit(ids[0]!, status, 'pending'), [])));
      expect(results.filter((result) => result.ok)).toHaveLength(1);
      expect((await store.readAudit())).toHaveLength(2);
    });

    it('refuses a commit on a missing proposal', async () => {
      const store = await hooks.make();
      expect(await store.commit(ids[2]!, 'x', proposal(ids[2]!), null, [])).toEqual({ ok: false, reason: 'missing' });
    });

    it('lists by status sorted by id, and counts every state with zeros', async () => {
      const store = await hooks.make();
      for (const [index, id] of [...ids].reverse().entries()) await store.create(proposal(id, index % 2 ? 'confirmed' : 'pending'), `k${index}`, audit(id, 'pending'));
      const pending = await store.list('pending');
      expect(pending.items.map((item) => item.id)).toEqual([ids[1], ids[3]]);
      expect((await store.ids('confirmed')).ids).toEqual([ids[0], ids[2]]);
      expect((await store.list()).items.map((item) => item.id)).toEqual(ids);
      const { counts, malformed, unknown } = await store.counts(['pending', 'confirmed', 'passed']);
      expect(counts).toEqual({ pending: 2, confirmed: 2, passed: 0 });
      expect(malformed).toEqual([]);
      expect(unknown).toEqual({});
      const { byId } = await store.statuses();
      expect(Object.fromEntries([...byId].map(([id, entry]) => [id, entry.status]))).toEqual({ [ids[0]!]: 'confirmed', [ids[1]!]: 'pending', [ids[2]!]: 'confirmed', [ids[3]!]: 'pending' });
    });

    it('lists the ids in a status that lack a marked field (a stamp), without reading them', async () => {
      const store = await hooks.make();
      await store.create({ ...proposal(ids[0]!, 'approved'), promoted_at: '2026-11-01T00:00:00Z' }, 'k0', audit(ids[0]!, 'approved'));
      await store.create(proposal(ids[1]!, 'approved'), 'k1', audit(ids[1]!, 'approved'));
      expect((await store.ids('approved')).ids).toEqual([ids[0], ids[1]]);
      expect((await store.ids('approved', { without: 'promoted_at' })).ids).toEqual([ids[1]]);
      expect((await store.statuses()).byId.get(ids[0]!)).toEqual({ status: 'approved', marked: ['promoted_at'] });
    });

    it('reports a malformed proposal by id and never counts or lists it', async () => {
      const store = await hooks.make();
      await store.create(proposal(ids[0]!), 'k', audit(ids[0]!, 'pending'));
      await hooks.corrupt(store, ids[1]!, '{"id": "trunc');
      await hooks.corrupt(store, ids[2]!, '');
      await hooks.corrupt(store, ids[3]!, '[1, 2]');
      const { counts, malformed } = await store.counts(['pending']);
      expect(counts).toEqual({ pending: 1 });
      expect(malformed).toEqual([ids[1], ids[2], ids[3]]);
      const listing = await store.list('pending');
      expect(listing.items.map((item) => item.id)).toEqual([ids[0]]);
      expect(listing.malformed).toEqual([ids[1], ids[2], ids[3]]);
      expect((await store.read(ids[1]!)).kind).toBe('malformed');
    });

    it('appends whole ledger rows and audit rows, and finds the last audit row of a proposal', async () => {
      const store = await hooks.make();
      await store.appendLedger('declined', { artifact_id: 'a', reason: 'r' });
      await store.appendLedger('declined', { artifact_id: 'b', reason: 'line\nbreak' });
      expect(await store.readLedger('declined')).toEqual([{ artifact_id: 'a', reason: 'r' }, { artifact_id: 'b', reason: 'line\nbreak' }]);
      await store.appendAudit(audit(ids[0]!, 'pending'));
      await store.appendAudit(audit(ids[1]!, 'pending'));
      await store.appendAudit(audit(ids[0]!, 'confirmed', 'pending', 'confirm'));
      expect((await store.lastAudit(ids[0]!))?.to).toBe('confirmed');
      expect(await store.lastAudit(ids[2]!)).toBeUndefined();
    });

    it('answers ledger membership by field, including rows appended later or by another store', async () => {
      const store = await hooks.make();
      expect(await store.ledgerHas('declined', 'id', 'x')).toBe(false);
      await store.appendLedger('declined', { id: 'x', reason: 'r' });
      expect(await store.ledgerHas('declined', 'id', 'x')).toBe(true);
      expect(await store.ledgerHas('declined', 'reason', 'x')).toBe(false);
      const other = await hooks.reopen(store);
      await other.appendLedger('declined', { id: 'y' });
      expect(await store.ledgerHas('declined', 'id', 'y')).toBe(true);
    });

    it('gives a claim to one holder at a time', async () => {
      const store = await hooks.make();
      const first = await store.claim('judge', ids[0]!);
      expect(first).not.toBeNull();
      expect(await store.claim('judge', ids[0]!)).toBeNull();
      expect(await store.claim('promote', ids[0]!)).not.toBeNull();
      await first!.release();
      expect(await store.claim('judge', ids[0]!)).not.toBeNull();
    });

    it('writes an entry once and never overwrites it', async () => {
      const store = await hooks.make();
      expect(await store.writeEntry('approved', ids[0]!, { v: 1 })).toBe('written');
      expect(await store.writeEntry('approved', ids[0]!, { v: 2 })).toBe('exists');
      expect(await store.readEntry('approved', ids[0]!)).toEqual({ v: 1 });
    });

    it('caches values by key', async () => {
      const store = await hooks.make();
      expect(await store.cacheGet('k')).toBeUndefined();
      await store.cachePut('k', { text: 'answer' });
      expect(await store.cacheGet('k')).toEqual({ text: 'answer' });
    });

    it('round-trips any JSON proposal exactly', async () => {
      const store = await hooks.make();
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.dictionary(fc.string({ minLength: 1 }).filter((key) => !['id', 'status', 'artifact_id', '__proto__'].includes(key)), fc.jsonValue(), { maxKeys: 6 }), async (extra) => {
          n++;
          const id = `01ARZ3NDEKTSV4RRFFQ69G${String(n).padStart(4, '0')}`;
          const value = { id, artifact_id: `prop-${n}`, status: 'pending', ...extra };
          const created = await store.create(value, `prop-${n}`, audit(id, 'pending'));
          if (!created.ok) return false;
          const read = await store.read(id);
          return read.kind === 'found' && JSON.stringify(read.stored.proposal) === JSON.stringify(JSON.parse(JSON.stringify(value)));
        }),
        { numRuns: 60 },
      );
    });
  });
}
