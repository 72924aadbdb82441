/**
 * A store in memory: the same contract as the file store and PostgreSQL, with none of their
 * machinery — which is the point: it proves the seam is not the shape of any one backend, and it
 * gives tests a store with no I/O. Handles opened with `reopen()` share the data and act as
 * other processes (their own leases).
 */
import { randomBytes } from 'node:crypto';
import { hasPath, isObject } from '../util/json-path.js';
import { isUlid } from '../util/ids.js';
import {
  serializeProposal,
  type AnswerCache,
  type AuditRow,
  type Change,
  type Claimed,
  type CommitResult,
  type Counts,
  type CreateResult,
  type Dumped,
  type IndexEntry,
  type Lease,
  type Listed,
  type NewProposal,
  type Query,
  type Queue,
  type ReadResult,
  type Store,
  type StoreLayout,
  parseDocument,
  statusFilter,
} from './types.js';
import { assertCollectionName } from './journal.js';

interface LeaseRow {
  token: string;
  owner: string;
  expires: number;
}

/** The data every handle of one memory store shares. */
interface Shared {
  /** Proposal id → document text (malformed text included: it is reported, never parsed away). */
  documents: Map<string, string>;
  keys: Map<string, string>;
  ledgers: Map<string, Record<string, unknown>[]>;
  audit: AuditRow[];
  entries: Map<string, Map<string, string>>;
  named: Map<string, Map<string, string>>;
  leases: Map<string, LeaseRow>;
  cache: Map<string, string>;
  cacheBytes: Map<string, Uint8Array>;
  tokens: number;
}

const clone = <T>(value: T): T => structuredClone(value);

export class MemoryStore implements Store {
  readonly location: string;
  readonly cache: AnswerCache;
  private readonly shared: Shared;
  private readonly owner = randomBytes(6).toString('hex');

  constructor(
    private readonly layout: StoreLayout,
    shared?: Shared,
    private readonly now: () => number = Date.now,
  ) {
    this.location = 'memory';
    this.shared = shared ?? {
      documents: new Map(),
      keys: new Map(),
      ledgers: new Map(),
      audit: [],
      entries: new Map(),
      named: new Map(),
      leases: new Map(),
      cache: new Map(),
      cacheBytes: new Map(),
      tokens: 0,
    };
    const { cache, cacheBytes } = this.shared;
    this.cache = {
      get: async (key, maxBytes = Number.POSITIVE_INFINITY) => {
        const text = cache.get(key);
        return text !== undefined && Buffer.byteLength(text) <= maxBytes ? (JSON.parse(text) as unknown) : undefined;
      },
      put: async (key, value) => void cache.set(key, JSON.stringify(value)),
      // Copies both ways (a Buffer's own slice() is a view, not a copy).
      getBytes: async (key, maxBytes = Number.POSITIVE_INFINITY) => {
        const bytes = cacheBytes.get(key);
        return bytes && bytes.length <= maxBytes ? new Uint8Array(bytes) : undefined;
      },
      putBytes: async (key, bytes) => void cacheBytes.set(key, new Uint8Array(bytes)),
    };
  }

  /** Another handle on the same data, acting as another process. */
  reopen(): MemoryStore {
    return new MemoryStore(this.layout, this.shared, this.now);
  }

  /** Let a lease run out now, as if its holder died (tests). */
  expireLease(lease: Lease): void {
    const row = this.shared.leases.get(`${lease.stage}\u0000${lease.key}`);
    if (row) row.expires = 0;
  }

  /** Put raw text where a proposal is (tests of malformed documents). */
  putRaw(id: string, text: string): void {
    this.shared.documents.set(id, text);
  }

  async exists(): Promise<boolean> {
    return this.shared.documents.size > 0 || this.shared.audit.length > 0 || this.shared.ledgers.size > 0;
  }

  async close(): Promise<void> {}

  async recover(_options: { sweep?: boolean } = {}): Promise<number> {
    return 0; // nothing is ever half-written here
  }

  async read(id: string): Promise<ReadResult> {
    if (!isUlid(id)) throw new Error(`invalid id: ${JSON.stringify(id)}`);
    const text = this.shared.documents.get(id);
    return text === undefined ? { kind: 'missing' } : parseDocument(id, text);
  }

  private entry(id: string, text: string): IndexEntry {
    const read = parseDocument(id, text);
    if (read.kind !== 'found') return { id, status: null, marks: [] };
    const status = read.stored.proposal['status'];
    return { id, status: typeof status === 'string' ? status : null, marks: this.layout.marks.filter((field) => hasPath(read.stored.proposal, field)) };
  }

  async *index(query: Query = {}): AsyncIterable<IndexEntry> {
    const statuses = query.status === undefined ? undefined : ([] as string[]).concat(query.status);
    for (const id of [...this.shared.documents.keys()].sort()) {
      if (query.after !== undefined && id <= query.after) continue;
      const entry = this.entry(id, this.shared.documents.get(id)!);
      if (entry.status !== null && statuses && !statuses.includes(entry.status)) continue;
      if (entry.status !== null && query.without !== undefined && entry.marks.includes(query.without)) continue;
      yield entry;
    }
  }

  async *list(query: Query = {}): AsyncIterable<Listed> {
    const wanted = statusFilter(query);
    for await (const entry of this.index(query)) {
      const read = await this.read(entry.id);
      if (read.kind === 'found' && wanted(read.stored.proposal['status'])) yield read;
      else if (read.kind === 'malformed') yield { kind: 'malformed', id: entry.id, reason: read.reason };
    }
  }

  async counts(states: readonly string[]): Promise<Counts> {
    const counts = new Map(states.map((state) => [state, 0]));
    const unknown = new Map<string, number>();
    const malformed: string[] = [];
    for await (const entry of this.index()) {
      if (entry.status === null) malformed.push(entry.id);
      else if (counts.has(entry.status)) counts.set(entry.status, counts.get(entry.status)! + 1);
      else unknown.set(entry.status, (unknown.get(entry.status) ?? 0) + 1);
    }
    return { counts: Object.fromEntries(counts), malformed, unknown: Object.fromEntries(unknown) };
  }

  async keyHandled(key: string): Promise<{ by: 'proposal'; id: string } | { by: 'ledger' } | undefined> {
    const id = this.shared.keys.get(key);
    if (id !== undefined) return { by: 'proposal', id };
    for (const ledger of this.layout.key.ledgers) {
      if ((this.shared.ledgers.get(ledger) ?? []).some((row) => row[this.layout.key.field] === key)) return { by: 'ledger' };
    }
    return undefined;
  }

  async create(input: NewProposal): Promise<CreateResult> {
    const existing = this.shared.keys.get(input.key);
    if (existing !== undefined) return { ok: false, reason: 'key_exists', existing };
    const text = serializeProposal(input.proposal);
    this.shared.keys.set(input.key, input.proposal.id);
    this.shared.documents.set(input.proposal.id, text);
    this.shared.audit.push(clone(input.audit));
    return { ok: true, version: text };
  }

  private ledgerRows(ledger: string): Record<string, unknown>[] {
    if (ledger !== 'events' && this.layout.ledgers[ledger] === undefined) throw new Error(`unknown ledger "${ledger}"`);
    let rows = this.shared.ledgers.get(ledger);
    if (!rows) this.shared.ledgers.set(ledger, (rows = []));
    return rows;
  }

  private collection(map: Map<string, Map<string, string>>, name: string): Map<string, string> {
    let collection = map.get(name);
    if (!collection) map.set(name, (collection = new Map()));
    return collection;
  }

  async commit(change: Change): Promise<CommitResult> {
    if (change.audit.length === 0) throw new Error('a commit records at least one audit row');
    // Everything is checked before anything is written: the commit lands whole or not at all.
    if (change.lease && !this.holds(change.lease)) return { ok: false, reason: 'lease' };
    const current = this.shared.documents.get(change.id);
    if (current === undefined) return { ok: false, reason: 'missing' };
    if (current !== change.version) return { ok: false, reason: 'changed' };
    for (const write of change.entries ?? []) {
      if (write.op !== 'move') continue;
      if (!this.collection(this.shared.entries, write.from).has(write.id))
        return { ok: false, reason: 'entry', detail: `${write.from}/${write.id}.json is missing` };
      if (this.collection(this.shared.entries, write.to).has(write.id))
        return { ok: false, reason: 'entry', detail: `${write.to}/${write.id}.json exists already` };
    }
    const text = serializeProposal(change.next);
    this.shared.documents.set(change.id, text);
    for (const write of change.entries ?? []) {
      if (write.op === 'put') {
        const collection = this.collection(this.shared.entries, write.collection);
        if (!collection.has(write.id)) collection.set(write.id, `${JSON.stringify(write.entry, null, 2)}\n`);
      } else {
        const from = this.collection(this.shared.entries, write.from);
        this.collection(this.shared.entries, write.to).set(write.id, from.get(write.id)!);
        from.delete(write.id);
      }
    }
    for (const write of change.ledger ?? []) {
      const rows = this.ledgerRows(write.ledger);
      if (write.once !== undefined && rows.some((row) => JSON.stringify(row[write.once!]) === JSON.stringify(write.row[write.once!]))) continue;
      rows.push(clone(write.row));
    }
    this.shared.audit.push(...clone(change.audit));
    return { ok: true, version: text };
  }

  async appendLedger(ledger: string, row: Record<string, unknown>): Promise<void> {
    this.ledgerRows(ledger).push(clone(row));
  }

  async *ledger(ledger: string): AsyncIterable<Record<string, unknown>> {
    yield* clone(this.ledgerRows(ledger));
  }

  async *audit(options: { id?: string } = {}): AsyncIterable<AuditRow> {
    yield* clone(this.shared.audit.filter((row) => options.id === undefined || row.id === options.id));
  }

  async lastAudit(id: string): Promise<AuditRow | undefined> {
    for (let i = this.shared.audit.length - 1; i >= 0; i--) if (this.shared.audit[i]!.id === id) return clone(this.shared.audit[i]);
    return undefined;
  }

  async changes(cursor?: string): Promise<{ all: boolean; ids: string[]; cursor: string }> {
    const match = /^m1:(\d+)$/.exec(cursor ?? '');
    const length = this.shared.audit.length;
    if (!match || Number(match[1]) > length) return { all: true, ids: [], cursor: `m1:${length}` };
    const ids = new Set(this.shared.audit.slice(Number(match[1])).map((row) => row.id));
    return { all: false, ids: [...ids].sort(), cursor: `m1:${length}` };
  }

  async readEntry(collection: string, id: string): Promise<unknown | undefined> {
    const text = this.shared.entries.get(collection)?.get(id);
    return text === undefined ? undefined : (JSON.parse(text) as unknown);
  }

  async *entries(collection: string): AsyncIterable<string> {
    yield* [...(this.shared.entries.get(collection)?.keys() ?? [])].sort();
  }

  async prepareDocuments(collection: string): Promise<void> {
    assertCollectionName(collection);
  }

  async writeDocument(collection: string, name: string, document: unknown): Promise<'written' | 'exists'> {
    const named = this.collection(this.shared.named, collection);
    if (named.has(name)) return 'exists';
    named.set(name, `${JSON.stringify(document, null, 2)}\n`);
    return 'written';
  }

  async *dump(): AsyncIterable<Dumped> {
    const keys = new Map([...this.shared.keys].map(([key, id]) => [id, key]));
    for (const id of [...this.shared.documents.keys()].sort()) yield { kind: 'proposal', id, key: keys.get(id) ?? null, text: this.shared.documents.get(id)! };
    for (const row of this.shared.audit) yield { kind: 'audit', row: clone(row) };
    for (const ledger of Object.keys(this.layout.ledgers))
      for (const row of this.shared.ledgers.get(ledger) ?? []) yield { kind: 'ledger', ledger, row: clone(row) };
    for (const [collection, entries] of [...this.shared.entries].sort(([a], [b]) => (a < b ? -1 : 1))) {
      for (const [id, text] of [...entries].sort(([a], [b]) => (a < b ? -1 : 1))) yield { kind: 'entry', collection, id, text };
    }
    for (const [collection, named] of [...this.shared.named].sort(([a], [b]) => (a < b ? -1 : 1))) {
      for (const [name, text] of [...named].sort(([a], [b]) => (a < b ? -1 : 1))) yield { kind: 'document', collection, name, text };
    }
  }

  async load(items: AsyncIterable<Dumped>): Promise<void> {
    if (await this.exists()) throw new Error('the memory store is not empty');
    for await (const item of items) {
      if (item.kind === 'proposal') {
        this.shared.documents.set(item.id, item.text);
        if (item.key !== null) this.shared.keys.set(item.key, item.id);
      } else if (item.kind === 'audit') this.shared.audit.push(clone(item.row));
      else if (item.kind === 'ledger') this.ledgerRows(item.ledger).push(clone(item.row));
      else if (item.kind === 'entry') this.collection(this.shared.entries, item.collection).set(item.id, item.text);
      else this.collection(this.shared.named, item.collection).set(item.name, item.text);
    }
  }

  // Leases: a row per (stage, key) with an owner, a token and an expiry in this store's clock.

  private holds(lease: Lease): boolean {
    const row = this.shared.leases.get(`${lease.stage}\u0000${lease.key}`);
    return row !== undefined && row.token === lease.token && row.owner === this.owner && row.expires > this.now();
  }

  private take(stage: string, key: string, ttlMs: number): Lease | undefined {
    const name = `${stage}\u0000${key}`;
    const row = this.shared.leases.get(name);
    if (row && row.expires > this.now()) return undefined;
    const token = String(++this.shared.tokens);
    this.shared.leases.set(name, { token, owner: this.owner, expires: this.now() + ttlMs });
    return { stage, key, token };
  }

  async claim(stage: string, queue: Queue, max: number, ttlMs: number): Promise<Claimed> {
    const leases: Lease[] = [];
    if ('keys' in queue) {
      for (const key of queue.keys) {
        if (leases.length >= max) break;
        const lease = this.take(stage, key, ttlMs);
        if (lease) leases.push(lease);
      }
      return { leases };
    }
    let last: string | undefined;
    for await (const entry of this.index(queue.query)) {
      if (entry.status === null) continue;
      if (leases.length >= max) return { leases, next: last! };
      last = entry.id;
      const lease = this.take(stage, entry.id, ttlMs);
      if (lease) leases.push(lease);
    }
    return { leases };
  }

  async renew(leases: readonly Lease[], ttlMs: number): Promise<Lease[]> {
    const kept = leases.filter((lease) => this.holds(lease));
    for (const lease of kept) this.shared.leases.get(`${lease.stage}\u0000${lease.key}`)!.expires = this.now() + ttlMs;
    return kept;
  }

  async release(leases: readonly Lease[]): Promise<void> {
    for (const lease of leases) if (this.holds(lease)) this.shared.leases.delete(`${lease.stage}\u0000${lease.key}`);
  }

  async held(stage: string, queue: Queue): Promise<string[]> {
    const keys: string[] = [];
    if ('keys' in queue) keys.push(...queue.keys);
    else for await (const entry of this.index(queue.query)) if (entry.status !== null) keys.push(entry.id);
    return keys
      .filter((key) => {
        const row = this.shared.leases.get(`${stage}\u0000${key}`);
        return row !== undefined && row.owner !== this.owner;
      })
      .sort();
  }
}
