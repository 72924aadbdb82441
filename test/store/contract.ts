/**
 * The store contract: every backend (file, memory, PostgreSQL) must pass this suite, the way
 * hono runs one suite against every router. Behaviour only — nothing here knows how a store
 * keeps its data.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { tallyOf } from '../../engine/store/tally.js';
import type { AuditRow, Change, EntryWrite, Lease, Query, Store, StoreLayout } from '../../engine/store/types.js';

export interface ContractHooks {
  /** A fresh, empty store with `layout`. */
  make(layout: StoreLayout): Promise<Store>;
  /** A second handle on the same store: another process (another worker), in effect. */
  reopen(store: Store): Promise<Store>;
  /** Put raw garbage where a proposal with this id would be. */
  corrupt(store: Store, id: string, text: string): Promise<void>;
  /** Make the holder of a lease look dead (killed, or its lease expired). */
  expire(store: Store, lease: Lease): Promise<void>;
}

export const LAYOUT: StoreLayout = {
  ledgers: { declined: 'declined.jsonl', passed: 'passed.jsonl' },
  marks: ['promoted_at'],
  key: { field: 'artifact_id', ledgers: ['declined'] },
};

const ids = ['01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA2', '01ARZ3NDEKTSV4RRFFQ69G5FA3', '01ARZ3NDEKTSV4RRFFQ69G5FA4'];
const [A, B, C, D] = ids as [string, string, string, string];
const audit = (id: string, to: string, from: string | null = null, event = 'create'): AuditRow => ({
  at: '2026-11-01T00:00:00Z',
  id,
  event,
  from,
  to,
  stage: 'test',
  actor: 'cli',
});
const proposal = (id: string, status = 'pending', key = `key-${id}`, extra: Record<string, unknown> = {}) => ({
  id,
  artifact_id: key,
  created_at: '2026-11-01T00:00:00Z',
  status,
  candidate: { claim: `claim ${id}` },
  ...extra,
});

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function created(store: Store, id: string, status = 'pending', key = `key-${id}`, extra: Record<string, unknown> = {}): Promise<string> {
  const result = await store.create({ proposal: proposal(id, status, key, extra), key, audit: audit(id, status) });
  if (!result.ok) throw new Error(`create ${id}: ${JSON.stringify(result)}`);
  return result.version;
}

function change(id: string, version: string, status: string, more: Partial<Change> = {}): Change {
  return { id, version, next: proposal(id, status), audit: [audit(id, status, 'pending', 'move')], ...more };
}

export function storeContract(name: string, hooks: ContractHooks): void {
  // Every store a test opens is closed after it, before its directory is removed (the helpers'
  // afterEach runs after this one): a file store's temp-file worker may still be filling a lane
  // when a test ends, and a removal racing it failed with ENOTEMPTY now and then.
  const opened: Store[] = [];
  const keep = (store: Store) => {
    opened.push(store);
    return store;
  };
  const make = async () => keep(await hooks.make(LAYOUT));
  const reopen = async (store: Store) => keep(await hooks.reopen(store));

  describe(`store contract: ${name}`, () => {
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });
    describe('proposals', () => {
      it('creates and reads back a proposal with a version', async () => {
        const store = await make();
        const version = await created(store, A);
        const read = await store.read(A);
        expect(read.kind).toBe('found');
        expect(read.kind === 'found' && read.stored.proposal).toEqual(proposal(A));
        expect(read.kind === 'found' && read.stored.version).toBe(version);
        expect(await all(store.audit())).toEqual([audit(A, 'pending')]);
      });

      it('reports a missing proposal as missing, and an empty store as not existing', async () => {
        const store = await make();
        expect(await store.read(B)).toEqual({ kind: 'missing' });
        expect(await store.exists()).toBe(false);
      });

      it('refuses any id that is not a ULID', async () => {
        const store = await make();
        for (const id of ['../../etc/passwd', 'a/b', '01arz3ndektsv4rrffq69g5fav', '']) await expect(store.read(id)).rejects.toThrow(/invalid id/);
      });

      it('refuses a second proposal for a taken key, naming its owner; a declined key is handled too', async () => {
        const store = await make();
        await created(store, A, 'pending', 'same');
        const second = await store.create({ proposal: proposal(B, 'pending', 'same'), key: 'same', audit: audit(B, 'pending') });
        expect(second).toEqual({ ok: false, reason: 'key_exists', existing: A });
        expect(await store.keyHandled('same')).toEqual({ by: 'proposal', id: A });
        expect(await store.keyHandled('other')).toBeUndefined();
        expect((await store.read(B)).kind).toBe('missing');
        await store.appendLedger('declined', { artifact_id: 'other', reason: 'no_versions' });
        expect(await store.keyHandled('other')).toEqual({ by: 'ledger' });
      });

      it('keeps a key of the most a key may hold (1 KiB, in characters of two and three bytes too), proposed and declined', async () => {
        const store = await make();
        const keys = ['k'.repeat(1024), 'é'.repeat(512), '€'.repeat(341)];
        for (const [index, key] of keys.entries()) await created(store, ids[index]!, 'pending', key);
        for (const [index, key] of keys.entries()) expect(await store.keyHandled(key)).toEqual({ by: 'proposal', id: ids[index] });
        const declined = `d${'k'.repeat(1023)}`;
        await store.appendLedger('declined', { artifact_id: declined, reason: 'no_versions' });
        expect(await store.keyHandled(declined)).toEqual({ by: 'ledger' });
      });

      it('round-trips any JSON proposal exactly, key order included', async () => {
        const store = await make();
        let n = 0;
        await fc.assert(
          fc.asyncProperty(
            fc.dictionary(
              fc.string({ minLength: 1 }).filter((key) => !['id', 'status', 'artifact_id', '__proto__'].includes(key)),
              fc.jsonValue(),
              { maxKeys: 6 },
            ),
            async (extra) => {
              n++;
              const id = `01ARZ3NDEKTSV4RRFFQ69G${String(n).padStart(4, '0')}`;
              const value = { id, artifact_id: `prop-${n}`, status: 'pending', ...extra };
              const result = await store.create({ proposal: value, key: `prop-${n}`, audit: audit(id, 'pending') });
              if (!result.ok) return false;
              const read = await store.read(id);
              return read.kind === 'found' && JSON.stringify(read.stored.proposal) === JSON.stringify(JSON.parse(JSON.stringify(value)));
            },
          ),
          { numRuns: 40 },
        );
      });
    });

    describe('commits', () => {
      it('commit only onto the version that was read; a stale one writes nothing at all', async () => {
        const store = await make();
        const version = await created(store, A);
        expect((await store.commit(change(A, version, 'confirmed'))).ok).toBe(true);
        const stale = await store.commit(
          change(A, version, 'passed', {
            ledger: [{ ledger: 'passed', row: { id: A } }],
            entries: [{ op: 'put', collection: 'approved', id: A, entry: { v: 1 } }],
          }),
        );
        expect(stale).toEqual({ ok: false, reason: 'changed' });
        const read = await store.read(A);
        expect(read.kind === 'found' && read.stored.proposal['status']).toBe('confirmed');
        expect(await all(store.ledger('passed'))).toEqual([]);
        expect(await store.readEntry('approved', A)).toBeUndefined();
        expect((await all(store.audit())).map((row) => row.to)).toEqual(['pending', 'confirmed']);
      });

      it('writes nothing for a stale commit under a lease it holds, and the lease stays held', async () => {
        const store = await make();
        const other = await reopen(store);
        const version = await created(store, A);
        const { leases } = await store.claim('judge', { keys: [A] }, 1, 60_000);
        expect((await store.commit(change(A, version, 'confirmed'))).ok).toBe(true);
        const stale = await store.commit(
          change(A, version, 'approved', {
            lease: leases[0]!,
            audit: [audit(A, 'approved', 'pending', 'approve'), audit(A, 'approved', 'approved', 'promote')],
            ledger: [{ ledger: 'declined', row: { id: A }, once: 'id' }],
            entries: [{ op: 'put', collection: 'approved', id: A, entry: { v: 1 } }],
          }),
        );
        expect(stale).toEqual({ ok: false, reason: 'changed' });
        expect(await all(store.ledger('declined'))).toEqual([]);
        expect(await store.readEntry('approved', A)).toBeUndefined();
        expect((await all(store.audit({ id: A }))).map((row) => row.to)).toEqual(['pending', 'confirmed']);
        expect((await other.claim('judge', { keys: [A] }, 1, 60_000)).leases).toEqual([]);
      });

      it('lets exactly one of racing commits of the same version win, from any handle', async () => {
        const store = await make();
        const other = await reopen(store);
        const version = await created(store, A);
        const results = await Promise.all(
          ['confirmed', 'passed', 'confirmed', 'passed'].map((status, i) => (i % 2 ? other : store).commit(change(A, version, status))),
        );
        expect(results.filter((result) => result.ok)).toHaveLength(1);
        expect(await all(store.audit({ id: A }))).toHaveLength(2);
      });

      it('refuses a commit on a missing proposal', async () => {
        const store = await make();
        expect(await store.commit(change(C, 'x', 'confirmed'))).toEqual({ ok: false, reason: 'missing' });
      });

      it('lands the proposal, its audit rows, ledger rows and pool entries together', async () => {
        const store = await make();
        const version = await created(store, A);
        const rows = [audit(A, 'approved', 'pending', 'approve'), audit(A, 'approved', 'approved', 'promote')];
        const result = await store.commit({
          ...change(A, version, 'approved'),
          audit: rows,
          ledger: [{ ledger: 'declined', row: { id: A, reason: 'r' } }],
          entries: [{ op: 'put', collection: 'approved', id: A, entry: { id: A, n: 1 } }],
        });
        expect(result.ok).toBe(true);
        expect((await all(store.audit({ id: A }))).slice(1)).toEqual(rows);
        expect(await store.lastAudit(A)).toEqual(rows[1]);
        expect(await all(store.ledger('declined'))).toEqual([{ id: A, reason: 'r' }]);
        expect(await store.readEntry('approved', A)).toEqual({ id: A, n: 1 });
        expect(await all(store.entries('approved'))).toEqual([A]);
      });

      it('never overwrites an entry, and appends a `once` row only when none names the proposal', async () => {
        const store = await make();
        let version = await created(store, A);
        const first = await store.commit({
          ...change(A, version, 'confirmed'),
          ledger: [{ ledger: 'declined', row: { id: A, n: 1 }, once: 'id' }],
          entries: [{ op: 'put', collection: 'approved', id: A, entry: { v: 1 } }],
        });
        version = first.ok ? first.version : '';
        const second = await store.commit({
          ...change(A, version, 'approved'),
          audit: [audit(A, 'approved', 'confirmed', 'x')],
          ledger: [{ ledger: 'declined', row: { id: A, n: 2 }, once: 'id' }],
          entries: [{ op: 'put', collection: 'approved', id: A, entry: { v: 2 } }],
        });
        expect(second.ok).toBe(true);
        expect(await store.readEntry('approved', A)).toEqual({ v: 1 });
        expect(await all(store.ledger('declined'))).toEqual([{ id: A, n: 1 }]);
      });

      it('moves an entry between collections byte for byte, and refuses a move with nothing to move, writing nothing', async () => {
        const store = await make();
        let version = await created(store, A);
        const entry = { id: A, claim: 'x', nested: { list: [1, 'two', null] } };
        let result = await store.commit({ ...change(A, version, 'approved'), entries: [{ op: 'put', collection: 'approved', id: A, entry }] });
        version = result.ok ? result.version : '';
        result = await store.commit({
          ...change(A, version, 'archived'),
          audit: [audit(A, 'archived', 'approved', 'archive')],
          entries: [{ op: 'move', from: 'approved', to: 'archived', id: A }],
        });
        expect(result.ok).toBe(true);
        version = result.ok ? result.version : '';
        expect(await store.readEntry('approved', A)).toBeUndefined();
        expect(await store.readEntry('archived', A)).toEqual(entry);
        const refused = await store.commit({
          ...change(A, version, 'archived'),
          audit: [audit(A, 'archived', 'approved', 'archive')],
          entries: [{ op: 'move', from: 'approved', to: 'archived', id: A }],
        });
        expect(refused).toMatchObject({ ok: false, reason: 'entry' });
        expect(await all(store.audit({ id: A }))).toHaveLength(3);
        result = await store.commit({
          ...change(A, version, 'approved'),
          audit: [audit(A, 'approved', 'archived', 'restore')],
          entries: [{ op: 'move', from: 'archived', to: 'approved', id: A }],
        });
        expect(result.ok).toBe(true);
        expect(await store.readEntry('approved', A)).toEqual(entry);
        expect(await all(store.entries('archived'))).toEqual([]);
      });

      it('keeps a moved entry exactly — key order and values — through archive and restore, and reports the moves as changes', async () => {
        const store = await make();
        let version = await created(store, A);
        const entry = { z: 1, id: A, a: { y: [2, { x: null }], b: 'é\u2028' }, m: -0.5 };
        const since = await store.changes();
        let result = await store.commit({ ...change(A, version, 'approved'), entries: [{ op: 'put', collection: 'approved', id: A, entry }] });
        const moves = [
          ['approved', 'archived', 'archived'],
          ['archived', 'approved', 'approved'],
          ['approved', 'archived', 'archived'],
        ] as const;
        for (const [from, to, status] of moves) {
          version = result.ok ? result.version : '';
          result = await store.commit({ ...change(A, version, status), audit: [audit(A, status, from, 'move')], entries: [{ op: 'move', from, to, id: A }] });
          expect(result.ok).toBe(true);
          expect(JSON.stringify(await store.readEntry(to, A))).toBe(JSON.stringify(entry));
          expect(await store.readEntry(from, A)).toBeUndefined();
        }
        expect(await store.changes(since.cursor)).toMatchObject({ all: false, ids: [A] });
      });

      it('refuses a move onto an entry that is already there, writing nothing', async () => {
        const store = await make();
        const version = await created(store, A);
        const both: EntryWrite[] = [
          { op: 'put', collection: 'approved', id: A, entry: { v: 1 } },
          { op: 'put', collection: 'archived', id: A, entry: { v: 2 } },
        ];
        const first = await store.commit({ ...change(A, version, 'approved'), entries: both });
        const next = first.ok ? first.version : '';
        const move: EntryWrite[] = [{ op: 'move', from: 'approved', to: 'archived', id: A }];
        const moved = await store.commit({ ...change(A, next, 'archived'), audit: [audit(A, 'archived', 'approved', 'archive')], entries: move });
        expect(moved).toMatchObject({ ok: false, reason: 'entry' });
        expect(await store.readEntry('approved', A)).toEqual({ v: 1 });
        expect(await store.readEntry('archived', A)).toEqual({ v: 2 });
        const read = await store.read(A);
        expect(read.kind === 'found' && read.stored.proposal['status']).toBe('approved');
        expect(await all(store.audit({ id: A }))).toHaveLength(2);
      });

      it('refuses a commit under a lease that is not (or no longer) the committer’s', async () => {
        const store = await make();
        const other = await reopen(store);
        const version = await created(store, A);
        const { leases } = await store.claim('judge', { keys: [A] }, 1, 60_000);
        const lease = leases[0]!;
        expect(await other.commit({ ...change(A, version, 'confirmed'), lease })).toEqual({ ok: false, reason: 'lease' });
        await hooks.expire(store, lease);
        const taken = await other.claim('judge', { keys: [A] }, 1, 60_000);
        expect(taken.leases).toHaveLength(1);
        expect(await store.commit({ ...change(A, version, 'confirmed'), lease })).toEqual({ ok: false, reason: 'lease' });
        expect((await other.commit({ ...change(A, version, 'confirmed'), lease: taken.leases[0]! })).ok).toBe(true);
      });

      it('appends standalone ledger rows whole, in order', async () => {
        const store = await make();
        await store.appendLedger('declined', { artifact_id: 'a', reason: 'r' });
        await store.appendLedger('declined', { artifact_id: 'b', reason: 'line\nbreak' });
        expect(await all(store.ledger('declined'))).toEqual([
          { artifact_id: 'a', reason: 'r' },
          { artifact_id: 'b', reason: 'line\nbreak' },
        ]);
        expect(await all(store.ledger('passed'))).toEqual([]);
      });

      it('writes a named document once and never overwrites it; its place can be made ready first', async () => {
        const store = await make();
        await store.prepareDocuments('prune-receipts');
        await expect(store.prepareDocuments('../outside')).rejects.toThrow();
        expect(await store.writeDocument('prune-receipts', '2026-11-01T00:00:00Z.json', { v: 1 })).toBe('written');
        expect(await store.writeDocument('prune-receipts', '2026-11-01T00:00:00Z.json', { v: 2 })).toBe('exists');
      });
    });

    describe('listings', () => {
      it('lists by status (or statuses) in id order with keyset paging, and counts every state with zeros', async () => {
        const store = await make();
        for (const [index, id] of [...ids].reverse().entries()) await created(store, id, index % 2 ? 'confirmed' : 'pending', `k${index}`);
        const ofStatus = async (status: string | string[], after?: string) =>
          (await all(store.list({ status, ...(after ? { after } : {}) }))).map((item) => (item.kind === 'found' ? item.stored.id : item.id));
        expect(await ofStatus('pending')).toEqual([B, D]);
        expect(await ofStatus('confirmed')).toEqual([A, C]);
        expect(await ofStatus(['pending', 'confirmed'], B)).toEqual([C, D]);
        expect((await all(store.index())).map((entry) => entry.id)).toEqual(ids);
        const { counts, malformed, unknown } = await store.counts(['pending', 'confirmed', 'passed']);
        expect(counts).toEqual({ pending: 2, confirmed: 2, passed: 0 });
        expect(malformed).toEqual([]);
        expect(unknown).toEqual({});
      });

      it('counts a status the lifecycle does not know apart, whatever its name', async () => {
        const store = await make();
        await created(store, A, 'constructor');
        await created(store, B, '__proto__', 'k2');
        const { counts, unknown } = await store.counts(['pending']);
        expect(counts).toEqual({ pending: 0 });
        expect(Object.entries(unknown).sort()).toEqual([
          ['__proto__', 1],
          ['constructor', 1],
        ]);
      });

      it('lists the proposals that lack a marked field (a stamp) without reading them', async () => {
        const store = await make();
        await created(store, A, 'approved', 'k0', { promoted_at: '2026-11-01T00:00:00Z' });
        await created(store, B, 'approved', 'k1');
        expect((await all(store.index({ status: 'approved' }))).map((entry) => entry.id)).toEqual([A, B]);
        expect((await all(store.index({ status: 'approved', without: 'promoted_at' }))).map((entry) => entry.id)).toEqual([B]);
        expect((await all(store.index({ status: 'approved' })))[0]).toEqual({ id: A, status: 'approved', marks: ['promoted_at'] });
      });

      it('tallies what a query matches by status and by a mark (tallyOf: the store counts, or its index is listed), malformed ones apart', async () => {
        const store = await make();
        await created(store, A, 'approved', 'k0', { promoted_at: '2026-11-01T00:00:00Z' });
        await created(store, B, 'approved', 'k1');
        await created(store, C, 'rejected', 'k2', { promoted_at: '2026-11-01T00:00:00Z' });
        await hooks.corrupt(store, D, '{"status": "approved"');
        const tallied = async (query: Query, mark?: string) => (await tallyOf(store, query, mark)).sort((a, b) => (a.status < b.status ? -1 : 1));
        expect(await tallied({ status: ['approved', 'rejected'] }, 'promoted_at')).toEqual([
          { status: 'approved', count: 2, marked: 1 },
          { status: 'rejected', count: 1, marked: 1 },
        ]);
        expect(await tallied({ status: 'approved' })).toEqual([{ status: 'approved', count: 2, marked: 0 }]);
        expect(await tallied({ status: 'approved', without: 'promoted_at' }, 'promoted_at')).toEqual([{ status: 'approved', count: 1, marked: 0 }]);
        expect(await tallied({ status: 'approved', after: A })).toEqual([{ status: 'approved', count: 1, marked: 0 }]);
        expect(await tallied({}, 'promoted_at')).toEqual([
          { status: 'approved', count: 2, marked: 1 },
          { status: 'rejected', count: 1, marked: 1 },
        ]);
        expect(await tallied({ status: 'pending' })).toEqual([]);
      });

      it('reports a malformed proposal by id and never counts it or lists it as a proposal', async () => {
        const store = await make();
        await created(store, A);
        await hooks.corrupt(store, B, '{"id": "trunc');
        await hooks.corrupt(store, C, '');
        await hooks.corrupt(store, D, '[1, 2]');
        const { counts, malformed } = await store.counts(['pending']);
        expect(counts).toEqual({ pending: 1 });
        expect(malformed).toEqual([B, C, D]);
        const listing = await all(store.list({ status: 'pending' }));
        expect(listing.filter((item) => item.kind === 'found').map((item) => item.kind === 'found' && item.stored.id)).toEqual([A]);
        expect(listing.filter((item) => item.kind === 'malformed').map((item) => item.kind === 'malformed' && item.id)).toEqual([B, C, D]);
        // Worded the same on every backend (SPEC §4: every message is).
        const reasons = await Promise.all(
          [B, C, D].map(async (id) => {
            const read = await store.read(id);
            return read.kind === 'malformed' && read.reason;
          }),
        );
        expect(reasons).toEqual(['not valid JSON (line 1, column 14)', 'empty file', 'not a JSON object']);
      });

      it('lists a document by its own status: one of no status, or a status that is no name, is in no state’s listing', async () => {
        const store = await make();
        await created(store, A);
        await created(store, B, 'confirmed');
        // Written by hand: a proposal whose status is a number, and one with none at all.
        await hooks.corrupt(store, C, JSON.stringify({ ...proposal(C), status: 5 }));
        const { status: _dropped, ...statusless } = proposal(D);
        await hooks.corrupt(store, D, JSON.stringify(statusless));
        const found = async (query: Query) =>
          (await all(store.list(query))).filter((item) => item.kind === 'found').map((item) => item.kind === 'found' && item.stored.id);
        expect(await found({ status: 'pending' })).toEqual([A]);
        expect(await found({ status: 'confirmed' })).toEqual([B]);
        expect(await found({ status: ['pending', 'confirmed'] })).toEqual([A, B]);
        expect(await found({})).toEqual([A, B, C, D]);
      });

      it('keeps the audit log and the ledgers in the order rows were written, however many', async () => {
        const store = await make();
        const made: string[] = [];
        for (let i = 0; i < 25; i++) {
          const id = `01ARZ3NDEKTSV4RRFFQ69G${String(25 - i).padStart(4, '0')}`;
          await created(store, id, 'pending', `k${i}`);
          await store.appendLedger('declined', { artifact_id: `k${i}`, n: i });
          made.push(id);
        }
        expect((await all(store.audit())).map((row) => row.id)).toEqual(made);
        expect((await all(store.ledger('declined'))).map((row) => row['n'])).toEqual(made.map((_id, i) => i));
      });

      it('gives each proposal its audit history in order, and its last row', async () => {
        const store = await make();
        const version = await created(store, A);
        await created(store, B);
        await store.commit(change(A, version, 'confirmed'));
        expect((await all(store.audit({ id: A }))).map((row) => row.to)).toEqual(['pending', 'confirmed']);
        expect((await store.lastAudit(A))?.to).toBe('confirmed');
        expect((await store.lastAudit(B))?.to).toBe('pending');
        expect(await store.lastAudit(C)).toBeUndefined();
      });
    });

    it('tells which proposals changed since a cursor, and when it cannot tell', async () => {
      const store = await make();
      const first = await store.changes();
      expect(first.all).toBe(true);
      const version = await created(store, A);
      await created(store, B);
      const second = await store.changes(first.cursor);
      expect(second).toMatchObject({ all: false, ids: [A, B] });
      await store.commit(change(A, version, 'confirmed'));
      expect(await store.changes(second.cursor)).toMatchObject({ all: false, ids: [A] });
      const third = await store.changes(second.cursor);
      expect(await store.changes(third.cursor)).toMatchObject({ all: false, ids: [] });
      expect((await store.changes('nonsense')).all).toBe(true);
    });

    describe('leases', () => {
      it('gives a unit to one holder at a time, per stage, across handles', async () => {
        const store = await make();
        const other = await reopen(store);
        const first = await store.claim('judge', { keys: [A] }, 10, 60_000);
        expect(first.leases.map((lease) => lease.key)).toEqual([A]);
        expect((await other.claim('judge', { keys: [A] }, 10, 60_000)).leases).toEqual([]);
        expect(await other.held('judge', { keys: [A, B] })).toEqual([A]);
        expect(await store.held('judge', { keys: [A, B] })).toEqual([]);
        expect((await other.claim('promote', { keys: [A] }, 10, 60_000)).leases).toHaveLength(1);
        await store.release(first.leases);
        expect((await other.claim('judge', { keys: [A] }, 10, 60_000)).leases).toHaveLength(1);
      });

      it('claims a query in id order, at most `max` at a time, skipping what others hold, with a keyset cursor', async () => {
        const store = await make();
        const other = await reopen(store);
        for (const id of ids) await created(store, id, 'confirmed');
        await other.claim('judge', { keys: [B] }, 1, 60_000);
        const first = await store.claim('judge', { query: { status: 'confirmed' } }, 2, 60_000);
        expect(first.leases.map((lease) => lease.key)).toEqual([A, C]);
        expect(first.next).toBeDefined();
        const rest = await store.claim('judge', { query: { status: 'confirmed', after: first.next! } }, 2, 60_000);
        expect(rest.leases.map((lease) => lease.key)).toEqual([D]);
        expect(rest.next).toBeUndefined();
        expect(await store.held('judge', { query: { status: 'confirmed' } })).toEqual([B]);
      });

      it('takes over the work of a dead holder, and keeps a lease while it is renewed', async () => {
        const store = await make();
        const other = await reopen(store);
        const { leases } = await store.claim('judge', { keys: [A, B] }, 10, 60_000);
        expect(await store.renew(leases, 60_000)).toEqual(leases);
        await hooks.expire(store, leases[0]!);
        // A dead holder's unit is still listed as held, so that a run retries it — and takes it over.
        expect(await other.held('judge', { keys: [A, B] })).toEqual([A, B]);
        expect((await other.claim('judge', { keys: [A, B] }, 10, 60_000)).leases.map((lease) => lease.key)).toEqual([A]);
        expect(await other.held('judge', { keys: [A, B] })).toEqual([B]);
        expect((await store.renew(leases, 60_000)).map((lease) => lease.key)).toEqual([B]);
      });
    });

    it('caches values by key', async () => {
      const store = await make();
      expect(await store.cache.get('k')).toBeUndefined();
      await store.cache.put('k', { text: 'answer' });
      expect(await store.cache.get('k')).toEqual({ text: 'answer' });
    });

    it('caches under a key as long as a whole prompt', async () => {
      const store = await make();
      // (A key holds the prompt: a long proposal makes one of tens of KB, and text compresses
      // less than a repeated phrase — which a database may squeeze into an index entry.)
      const text = Array.from({ length: 600 }, (_, i) => createHash('sha256').update(String(i)).digest('base64')).join(' ');
      const key = (n: number) => JSON.stringify(['openai', 'judge', 'model', `${n} ${text}`, 'standard']);
      await store.cache.put(key(1), { text: 'one' });
      await store.cache.put(key(2), { text: 'two' });
      await store.cache.putBytes(key(1), Uint8Array.of(1));
      expect(await store.cache.get(key(1))).toEqual({ text: 'one' });
      expect(await store.cache.get(key(2))).toEqual({ text: 'two' });
      expect([...(await store.cache.getBytes(key(1)))!]).toEqual([1]);
    });

    it('caches a large derived value and replaces it whole', async () => {
      const store = await make();
      const rows = Array.from({ length: 20_000 }, (_, i) => [`01ARZ3NDEKTSV4RRFF${String(i).padStart(8, '0')}`, i * 1000, i % 7, i % 3, [i % 5], [], [1, 2]]);
      await store.cache.put('pool-index:test:base', { v: 1, rows });
      expect(await store.cache.get('pool-index:test:base')).toEqual({ v: 1, rows });
      await store.cache.put('pool-index:test:base', { v: 2 });
      expect(await store.cache.get('pool-index:test:base')).toEqual({ v: 2 });
    });

    it('treats a JSON entry stored in more bytes than the reader allows as missing', async () => {
      const store = await make();
      // 2,012 bytes of JSON (1,000 two-byte characters): what a store adds around it (the file
      // store's log record: its key's digest) is far less than the margins here.
      const value = { text: 'é'.repeat(1000) };
      await store.cache.put('k', value);
      expect(await store.cache.get('k', 1000)).toBeUndefined();
      expect(await store.cache.get('k', 3000)).toEqual(value);
    });

    it('keeps bytes by key apart from the JSON entries, replaces them whole, and bounds what it reads', async () => {
      const store = await make();
      const key = 'pool-index:test:base';
      expect(await store.cache.getBytes(key)).toBeUndefined();
      const big = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256);
      await store.cache.putBytes(key, big);
      await store.cache.put(key, { json: true });
      // Byte for byte (Buffer#equals: toEqual walks 300,000 elements one by one, ~1.7 s a backend).
      const back = Buffer.from((await store.cache.getBytes(key))!);
      expect(back.length).toBe(big.length);
      expect(back.equals(big)).toBe(true);
      expect(await store.cache.get(key)).toEqual({ json: true });
      expect(await store.cache.getBytes(key, big.length - 1)).toBeUndefined();
      await store.cache.putBytes(key, Uint8Array.of(1, 2, 3));
      expect([...(await store.cache.getBytes(key, 3))!]).toEqual([1, 2, 3]);
      // Another handle (another process) reads what this one kept.
      expect([...(await (await reopen(store)).cache.getBytes(key))!]).toEqual([1, 2, 3]);
      // What is kept is a copy, and so is what is read (a Buffer's slice() would be a view).
      const kept = Buffer.from([7, 8]);
      await store.cache.putBytes(key, kept);
      kept[0] = 99;
      const read = (await store.cache.getBytes(key))!;
      read[1] = 77;
      expect([...(await store.cache.getBytes(key))!]).toEqual([7, 8]);
    });

    it('has nothing to recover when nothing crashed', async () => {
      const store = await make();
      await created(store, A);
      expect(await store.recover()).toBe(0);
    });
  });
}
