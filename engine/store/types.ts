/**
 * The store seam. Every backend — the file store (embedded default), the in-memory store
 * (tests, and the proof that the seam is not the file store's shape) and PostgreSQL (many
 * workers) — passes the same contract suite (test/store/contract.ts).
 *
 * The seam is transactional by design: a commit carries everything one change of a proposal
 * writes — the proposal, its audit rows, its ledger rows, its pool entries — and lands whole or
 * not at all, so the engine never finishes half a commit. Work is claimed by leases with tokens;
 * listings are keyset-paged async iterables; the answer cache is a small interface of its own.
 */
import type { Proposal } from '../lifecycle/effects.js';
import { isObject } from '../util/json-path.js';

export interface AuditRow {
  at: string;
  id: string;
  event: string;
  from: string | null;
  to: string;
  stage: string;
  actor: 'cli' | 'run';
  /** The event's arguments, when it has any worth recording (e.g. `{result: "hit"}`). */
  args?: Record<string, unknown>;
  /** Added after a crash to finish an interrupted commit, at `repaired_at`. */
  repaired?: true;
  repaired_at?: string;
}

/** A proposal as read, with the opaque version a commit must match. */
export interface Stored {
  id: string;
  proposal: Proposal;
  version: string;
}

export type ReadResult = { kind: 'found'; stored: Stored } | { kind: 'missing' } | { kind: 'malformed'; reason: string };

/** A listed proposal: its document, or why it cannot be read. */
export type Listed = { kind: 'found'; stored: Stored } | { kind: 'malformed'; id: string; reason: string };

/** What listings and work selection know of a proposal without reading its document. */
export interface IndexEntry {
  id: string;
  /** Null when the document is malformed. */
  status: string | null;
  /** The store's marked fields the document has (e.g. a promotion stamp). */
  marks: string[];
}

/** Which proposals a listing (or a work queue) covers; always in id order. */
export interface Query {
  /** Only this status, or these (all when absent). */
  status?: string | readonly string[];
  /** Only those that lack this marked field. */
  without?: string;
  /** Keyset paging: only ids after this one. */
  after?: string;
}

/** Of the proposals a query matches, those of one status, and how many of them carry a mark. */
export interface StatusTally {
  status: string;
  count: number;
  marked: number;
}

export interface Counts {
  counts: Record<string, number>;
  malformed: string[];
  /** Proposals whose status the lifecycle does not know. */
  unknown: Record<string, number>;
}

/** A ledger row a commit appends. */
export interface LedgerWrite {
  ledger: string;
  row: Record<string, unknown>;
  /**
   * The row field that names the proposal, when at most one such row may exist for it: the row
   * is not appended again if the ledger already holds one (a terminal record is never written twice).
   */
  once?: string;
}

/** A pool-entry write a commit makes. Entries are never overwritten. */
export type EntryWrite =
  /** Write the entry unless one exists already (an existing entry is kept as it is). */
  | { op: 'put'; collection: string; id: string; entry: unknown }
  /** Move the entry between collections, byte for byte. */
  | { op: 'move'; from: string; to: string; id: string };

/** A lease on one unit of a stage's work (a proposal id, or a source key). */
export interface Lease {
  stage: string;
  key: string;
  /** Fencing token: a commit under a lease that is no longer current is refused. */
  token: string;
}

/** One change of one proposal, committed whole or not at all. */
export interface Change {
  id: string;
  /** The version the change was computed from: the commit applies only if the proposal is still at it. */
  version: string;
  next: Proposal;
  /** At least one row; a change that moves through two transitions (judge, then promote) has two. */
  audit: AuditRow[];
  ledger?: LedgerWrite[];
  entries?: EntryWrite[];
  /** The lease the change was computed under, checked at commit time. */
  lease?: Lease;
}

export type CommitResult =
  | { ok: true; version: string }
  /** changed: not at `version` any more; missing: gone; lease: the lease expired and someone else may hold the work; entry: a move found no entry to move. */
  | { ok: false; reason: 'changed' | 'missing' | 'lease' | 'entry'; detail?: string };

export interface NewProposal {
  proposal: Proposal & { id: string };
  /** The source key the proposal is made from (shipped: the artifact id); unique in the store. */
  key: string;
  audit: AuditRow;
}

export type CreateResult = { ok: true; version: string } | { ok: false; reason: 'key_exists'; existing: string };

/** Everything a store holds, one item at a time, for copying a whole store between backends. */
export type Dumped =
  /** The document's text exactly as stored (a malformed one included); `key` its source key. */
  | { kind: 'proposal'; id: string; key: string | null; text: string }
  | { kind: 'audit'; row: AuditRow }
  | { kind: 'ledger'; ledger: string; row: Record<string, unknown> }
  | { kind: 'entry'; collection: string; id: string; text: string }
  | { kind: 'document'; collection: string; name: string; text: string };

/** A work queue: proposals matching a query, or explicit keys (source records). */
export type Queue = { query: Query } | { keys: readonly string[] };

export interface Claimed {
  leases: Lease[];
  /** Where the next claim of this queue should continue (keyset); absent when it is exhausted. */
  next?: string;
}

/** Validated model answers (SPEC §6): never required for correctness. */
export interface AnswerCache {
  /**
   * The entry under `key`; one stored in more than `maxBytes` bytes is treated as missing. Never
   * throws: an entry that cannot be read (not there, unreadable, not JSON) is a miss.
   */
  get(key: string, maxBytes?: number): Promise<unknown | undefined>;
  put(key: string, value: unknown): Promise<void>;
  /**
   * A derived value kept as bytes (a layout of its own, read without a JSON parse) under `key`,
   * apart from the JSON entries: undefined when there is none, or it is over `maxBytes`, or it
   * cannot be read. Like every entry, never required for correctness.
   */
  getBytes(key: string, maxBytes?: number): Promise<Uint8Array | undefined>;
  putBytes(key: string, bytes: Uint8Array): Promise<void>;
}

export interface Store {
  /** Where it lives, for messages (a path, or a URL without credentials). */
  readonly location: string;
  readonly cache: AnswerCache;
  /**
   * How many commits in flight at once the store puts to use — a store whose concurrent commits
   * share their syncs (group commit) does more per sync the more it is given. A batch run lets up
   * to this many units wait for or make their commit past their slot (at least its concurrency,
   * which is the default, and at most 4 × it).
   */
  readonly commitDepth?: number;
  /** Has anything ever been written here? (Read-only commands say so when not.) */
  exists(): Promise<boolean>;

  read(id: string): Promise<ReadResult>;
  /** The documents matching `query`, in id order; malformed ones are yielded as such, never thrown. */
  list(query?: Query): AsyncIterable<Listed>;
  /** The index entries matching `query`, in id order, without reading the documents. */
  index(query?: Query): AsyncIterable<IndexEntry>;
  counts(states: readonly string[]): Promise<Counts>;
  /**
   * How many proposals `query` matches, by status, and how many of each carry the marked field
   * `mark` — counted where they are kept, without listing them (`tallyOf` is the way to ask).
   * Malformed documents are not counted. Optional: a store that can count only by listing leaves
   * it out, and `tallyOf` lists; the file store keeps that listing for the run's first claim.
   */
  tally?(query: Query, mark?: string): Promise<StatusTally[]>;

  /** Is this source key handled: taken by a proposal, or recorded in a declining ledger? */
  keyHandled(key: string): Promise<{ by: 'proposal'; id: string } | { by: 'ledger' } | undefined>;
  create(input: NewProposal): Promise<CreateResult>;
  commit(change: Change): Promise<CommitResult>;
  /** Append a row that belongs to no proposal commit (a declined source record). */
  appendLedger(ledger: string, row: Record<string, unknown>): Promise<void>;

  /** The rows of a ledger, oldest first; torn lines are skipped. */
  ledger(ledger: string): AsyncIterable<Record<string, unknown>>;
  /** The audit log, oldest first; `id` narrows it to one proposal. */
  audit(options?: { id?: string }): AsyncIterable<AuditRow>;
  /** A proposal's latest audit row. */
  lastAudit(id: string): Promise<AuditRow | undefined>;
  /**
   * The proposals committed since `cursor` (from the audit log), for views kept up to date
   * incrementally; `all` when the store cannot tell (no cursor, or its log was replaced): the
   * caller then rebuilds its view from a listing.
   */
  changes(cursor?: string): Promise<{ all: boolean; ids: string[]; cursor: string }>;

  readEntry(collection: string, id: string): Promise<unknown | undefined>;
  /** Ids of the entries in a collection, sorted. */
  entries(collection: string): AsyncIterable<string>;
  /** A named document outside any proposal's commit (a prune receipt); never overwritten. */
  writeDocument(collection: string, name: string, document: unknown): Promise<'written' | 'exists'>;
  /**
   * Make ready the place a collection's documents are written (a directory store: its directory),
   * or fail as `writeDocument` would: before work whose record goes there (a prune's archives, then
   * its receipt), so that the work is not done when its record cannot be written.
   */
  prepareDocuments(collection: string): Promise<void>;

  /** Lease up to `max` units of a stage's queue for `ttlMs`; skips what others hold. */
  claim(stage: string, queue: Queue, max: number, ttlMs: number): Promise<Claimed>;
  /** Renew leases; returns those still held (a lost one must not be committed). */
  renew(leases: readonly Lease[], ttlMs: number): Promise<Lease[]>;
  release(leases: readonly Lease[]): Promise<void>;
  /**
   * Units of the queue that someone else has leased: a live holder's, and one whose holder died
   * or let its lease lapse — a claim takes those over, so a caller that retries what this lists
   * finishes a dead run's work instead of leaving it behind.
   */
  held(stage: string, queue: Queue): Promise<string[]>;

  /**
   * Everything the store holds but its cache — proposals in id order, then the audit log, the
   * ledgers, pool entries and documents, each in its own order — for `store copy`.
   */
  dump(): AsyncIterable<Dumped>;
  /** Fill an empty store with a dump, exactly (texts, rows and their order kept). */
  load(items: AsyncIterable<Dumped>): Promise<void>;

  /**
   * Finish whatever a crashed writer left half-done; cheap when there is nothing. `sweep` also
   * clears what killed processes left lying around (a batch run's start; costs a listing of the
   * store). Returns how many commits were finished.
   */
  recover(options?: { sweep?: boolean }): Promise<number>;
  close(): Promise<void>;
}

/** What a backend needs to know of a pipeline to keep its data (names only, no behaviour). */
export interface StoreLayout {
  ledgers: Record<string, string>;
  /** Fields whose presence listings can filter on without reading documents (promotion stamps). */
  marks: string[];
  /** The proposal field holding the source key, and the ledgers whose rows also mark a key handled. */
  key: { field: string; ledgers: string[] };
}

/**
 * Why a parsed document cannot be the proposal stored under `id`, or undefined: its own `id`
 * field, when it has one, must name the same proposal (a file copied or renamed by hand would
 * otherwise be judged under one id and promoted under another).
 */
export function wrongId(id: string, document: Record<string, unknown>): string | undefined {
  if (!Object.hasOwn(document, 'id') || document['id'] === id) return undefined;
  const said =
    typeof document['id'] === 'string' ? JSON.stringify(document['id'].slice(0, 40)) : `a ${document['id'] === null ? 'null' : typeof document['id']}`;
  return `its id field is ${said}, not the id it is stored under`;
}

/** What a JSON parse error says, without quoting the text (it may be anything a link pointed at). */
function describeJsonError(text: string, error: unknown): string {
  const position = /position (\d+)/.exec((error as Error).message);
  if (!position) return 'not valid JSON';
  const before = text.slice(0, Number(position[1]));
  const line = before.split('\n').length;
  return `not valid JSON (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
}

/**
 * Parse a stored proposal document (`version`: what a commit compares, the text itself unless the
 * backend keeps a number): anything but a JSON object is malformed, and the reason is worded the
 * same on every backend (SPEC §4: every message is).
 */
export function parseDocument(id: string, text: string, version: string = text): ReadResult {
  if (text.trim() === '') return { kind: 'malformed', reason: 'empty file' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: 'malformed', reason: describeJsonError(text, error) };
  }
  if (!isObject(value)) return { kind: 'malformed', reason: 'not a JSON object' };
  const wrong = wrongId(id, value);
  if (wrong) return { kind: 'malformed', reason: wrong };
  return { kind: 'found', stored: { id, proposal: value, version } };
}

/** Does a status match a query's status (or statuses)? A listing keeps a document by its own status, whatever an index said. */
export function statusFilter(query: Query): (status: unknown) => boolean {
  const { status } = query;
  if (status === undefined) return () => true;
  if (typeof status === 'string') return (value) => value === status;
  return (value) => typeof value === 'string' && status.includes(value);
}

/** Proposal files are pretty-printed JSON, 2-space indent, trailing newline (SPEC §4). */
export function serializeProposal(proposal: Proposal): string {
  return `${JSON.stringify(proposal, null, 2)}\n`;
}
