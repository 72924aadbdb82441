/**
 * The store contract. The file store is the shipped backend; any other (SQLite, PostgreSQL with
 * `FOR UPDATE SKIP LOCKED` claims) must pass the same contract suite (test/store/contract.ts).
 */
import type { LedgerRow, Proposal } from '../lifecycle/effects.js';

export interface AuditRow {
  at: string;
  id: string;
  event: string;
  from: string | null;
  to: string;
  stage: string;
  actor: 'cli' | 'run';
}

/** A proposal as read, with the opaque version a commit must match. */
export interface Stored {
  id: string;
  proposal: Proposal;
  version: string;
}

export type ReadResult = { kind: 'found'; stored: Stored } | { kind: 'missing' } | { kind: 'malformed'; reason: string };

export interface Listing {
  items: Stored[];
  /** Ids of proposal files that are empty, truncated or not a JSON object. */
  malformed: string[];
}

export interface Counts {
  counts: Record<string, number>;
  malformed: string[];
  /** Proposals whose status the lifecycle does not know. */
  unknown: Record<string, number>;
}

export type CommitResult = { ok: true; version: string } | { ok: false; reason: 'changed' | 'missing' };

export type CreateResult = { ok: true; version: string } | { ok: false; reason: 'key_exists'; existing: string };

export interface Claim {
  release(): Promise<void>;
}

export interface Store {
  /** Where it lives, for messages. */
  readonly location: string;
  read(id: string): Promise<ReadResult>;
  /** Every proposal in `status` (all when undefined), sorted by id; malformed files reported, not thrown. */
  list(status?: string): Promise<Listing>;
  /**
   * Ids (sorted) in a status, without reading the proposals; `without` keeps only those that lack
   * a marked field (one of the store's `marks`, e.g. a promotion stamp).
   */
  ids(status: string, options?: { without?: string }): Promise<{ ids: string[]; malformed: string[] }>;
  counts(states: readonly string[]): Promise<Counts>;
  /** Every proposal's status (and marked fields) in one pass, without reading the proposals. */
  statuses(): Promise<{ byId: Map<string, { status: string; marked: string[] }>; malformed: string[] }>;
  /** Is this source key taken by a proposal? (Ledger rows are checked by the caller.) */
  keyOwner(key: string): Promise<string | undefined>;
  /** Create a proposal; refuses a key already taken. Writes the file, then the audit row. */
  create(proposal: Proposal & { id: string }, key: string, audit: AuditRow): Promise<CreateResult>;
  /** Replace a proposal only if it is still at `version`; then the audit row, then the ledger rows. */
  commit(id: string, version: string, next: Proposal, audit: AuditRow | null, rows: readonly LedgerRow[]): Promise<CommitResult>;
  appendLedger(ledger: string, row: Record<string, unknown>): Promise<void>;
  readLedger(ledger: string): Promise<Record<string, unknown>[]>;
  /** Does the ledger hold a row whose `field` is `value`? (Cheap to ask repeatedly.) */
  ledgerHas(ledger: string, field: string, value: unknown): Promise<boolean>;
  appendAudit(row: AuditRow): Promise<void>;
  /** The latest audit row of a proposal. */
  lastAudit(id: string): Promise<AuditRow | undefined>;
  /**
   * The latest audit row's event and target of every proposal, kept incrementally (cheap to ask
   * again); `save` persists what was learned now.
   */
  lastAudits(options?: { save?: boolean }): Promise<Map<string, { event: string; to: string }>>;
  readAudit(): Promise<AuditRow[]>;
  /** Run `fn` holding the proposal's commit lock (commits hold it across the file and its rows). */
  locked<T>(id: string, fn: () => Promise<T>): Promise<T>;
  /** Take a proposal (or a source key) for a stage run; null when another live run holds it. */
  claim(stage: string, key: string): Promise<Claim | null>;
  /** One JSON entry per proposal in a named collection (e.g. the pool). Never overwritten. */
  readEntry(collection: string, id: string): Promise<unknown | undefined>;
  writeEntry(collection: string, id: string, entry: unknown): Promise<'written' | 'exists'>;
  /** Cached model answers (§6): never required for correctness. */
  cacheGet(key: string): Promise<unknown | undefined>;
  cachePut(key: string, value: unknown): Promise<void>;
  /** Remove what killed processes left behind (temp files); returns how many. Safe at any time. */
  sweep(): Promise<number>;
  /** A path under the store, for messages ("pool entries are in …"). */
  pathOf(collection: string, id?: string): string;
}

/** Proposal files are pretty-printed JSON, 2-space indent, trailing newline (SPEC §4). */
export function serializeProposal(proposal: Proposal): string {
  return `${JSON.stringify(proposal, null, 2)}\n`;
}
