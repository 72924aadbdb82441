/**
 * The shipped store: a directory of JSON files (SPEC §4).
 *
 *   proposals/<id>.json     one file per proposal, every status, never deleted
 *   <collection>/<id>.json  pool entries (approved/, archived/), written once, moved byte for byte
 *   <ledger>.jsonl          append-only ledgers; events.jsonl is the audit log
 *   cache/                  validated model answers
 *   .journal/ .owners/ .locks/ .claims/ .index/   coordination and caches
 *
 * A commit lands whole: its intent goes to the process's journal (durable) before anything else
 * is touched, then the proposal file, its pool entries, its ledger rows and — last — its audit
 * rows are written. A crash at any point leaves an intent the next writer replays (the audit row
 * tells a finished commit from an unfinished one), so nothing is ever half-recorded.
 */
import { createHash } from 'node:crypto';
import { existsSync, linkSync, lstatSync, mkdirSync, promises as fs, readdirSync, type Stats, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { Busy, PipelineError } from '../errors.js';
import { systemReason } from './failures.js';
import { fsyncDir, groupSync, install, NotRegularFile, unlinkQuietly, writeFileAtomic, writeTemp } from '../util/atomic-write.js';
import { sweepTempSupplies, useTempSupply } from '../util/temp-supply.js';
import { isUlid } from '../util/ids.js';
import { isObject } from '../util/json-path.js';
import { readAuditIndex, type AuditMemo } from './audit-index.js';
import { FileAnswerCache } from './answer-cache.js';
import {
  appendDurably,
  DOCUMENT_MAX_BYTES,
  appendText,
  isRealDirectory,
  parseJsonLines,
  readRegular,
  readRegularFrom,
  endLine,
  finishTornLine,
  sizeOf,
  sweepTemps,
  TooLarge,
} from './files.js';
import { assertCollectionName, COLLECTION_NAME, RESERVED_COLLECTIONS, readIntents, Journal, type EntryIntent, type Intent } from './journal.js';
import { LedgerIndex } from './ledger-index.js';
import { ownerFileName, OwnerFiles, type Held } from './owner-files.js';
import { isAlive, type ProcessIdentity } from './process-identity.js';
import { localFileSystem, scanProposals, type ProposalScan, type ReadsListed } from './proposal-index.js';
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
  type LedgerWrite,
  type Listed,
  type NewProposal,
  type Query,
  type Queue,
  type ReadResult,
  parseDocument,
  type Store,
  statusFilter,
} from './types.js';

export interface FileStoreOptions {
  dir: string;
  /** Ledger name → file name (e.g. declined → declined.jsonl). */
  ledgers: Readonly<Record<string, string>>;
  /** Top-level fields whose presence the status index records (e.g. a promotion stamp). */
  marks?: readonly string[];
  /** The field that holds a proposal's source key, and the ledgers whose rows also mark a key handled. */
  key?: { field: string; ledgers: readonly string[] };
  /** How long a claim or lock of a process on another host lasts without renewal (ms). */
  leaseMs?: number;
}

const AUDIT_FILE = 'events.jsonl';
const DOCUMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,200}$/;
const STAGE_NAME = /^[a-z][a-z0-9_-]*$/;

function assertId(id: string): void {
  // Callers validate ids for the user's benefit; this guard keeps any path out of the store.
  if (!isUlid(id)) throw new Error(`invalid id: ${JSON.stringify(id)}`);
}

function assertCollection(collection: string): void {
  assertCollectionName(collection);
  if (RESERVED_COLLECTIONS.includes(collection)) throw new Error(`invalid collection name: ${JSON.stringify(collection)}`);
}

function keyFileName(key: string): string {
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/.test(key) ? key : `~${createHash('sha256').update(key).digest('hex')}`;
}

/**
 * Crash tests: `PIPELINE_FAILPOINT=<step>` kills the process (SIGKILL) right after that step of
 * its first commit — journaled, document, ledger, audit — so the tests crash exactly there.
 */
const FAILPOINT = process.env['PIPELINE_FAILPOINT'];
function failpoint(step: string): void {
  if (FAILPOINT === step) process.kill(process.pid, 'SIGKILL');
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function notRegularReason(error: NotRegularFile): string {
  return `${error.what}, not a regular file`;
}

/**
 * How long after the last change of `.journal/` a listing of it may be reused (see `journalNames`):
 * on a local file system, whose times come from this host's clock in steps of a few milliseconds,
 * a tenth of a second; elsewhere two seconds.
 */
const JOURNAL_LISTING_SETTLED_MS = { local: 100, other: 2000 };

/** For tests: how many times a store listed `.journal/`, and reused a listing instead. */
export const journalListings = { listed: 0, reused: 0 };

export class FileStore implements Store {
  readonly location: string;
  readonly cache: AnswerCache;
  private readonly answers: FileAnswerCache;
  /**
   * Concurrent commits share the journal's data sync, the directory syncs and the logs' data
   * syncs, so a batch run that hands the store more of them at once waits for fewer syncs per
   * commit: `run judge --yes` on 1,000 proposals at concurrency 8 took 3.4–5.9 s (median 3.8)
   * with 8 commits in flight and 2.3–2.6 s (2.5) with 32. More (64, at concurrency 32) cost the
   * latency-bound run CPU it needs for its model calls (docs/performance.md, 2026-12-04).
   */
  readonly commitDepth = 32;
  private readonly proposalsDir: string;
  /** The store's directory with its trailing separator: files of checked ids are named by concatenation (path.join is a hot spot of listings). */
  private readonly prefix: string;
  private readonly ledgers: Readonly<Record<string, string>>;
  private readonly marks: readonly string[];
  private readonly key: { field: string; ledgers: readonly string[] } | undefined;
  private readonly owners: OwnerFiles;
  private readonly ledgerIndex = new LedgerIndex();
  private readonly auditMemo: AuditMemo = { unsaved: 0 };
  /** Has the store's own directory been seen (it may be a link: where the user keeps it)? */
  private located = false;
  /** Directories this process has checked (what a read trusts; every write checks again). */
  private readonly checkedDirs = new Set<string>();
  private readonly dirParts = new Map<string, string[]>();
  private readonly claims = new Map<string, Held>();
  private readonly queues = new Map<string, string[]>();
  /**
   * What the last complete `index()` without `after` listed (the ids with a status, and their
   * marks), with the audit log and this handle's writes as they were before it began: the claim
   * pass that follows a run's selection takes its queue from it while neither has moved (see
   * `listedQueue`).
   */
  private listed: Listing | undefined;
  /** Writes this handle has begun that change proposals (creates, commits, replays of a dead journal, a load), and those still running. */
  private writes = 0;
  private inFlight = 0;
  private journal: Journal | undefined;
  private recovered: Promise<number> | undefined;
  private swept = false;
  /** Stops this store's use of temp files made ahead (temp-supply.ts). */
  private stopSupply: (() => Promise<void>) | undefined;
  /** Owner names seen alive, and when: a live owner is asked again after a second. */
  private readonly seenAlive = new Map<string, number>();
  /** The last listing of `.journal/` (see `journalNames`). */
  private journalListing: { identity: string; listedAt: number; listedTick: number; names: string[] } | undefined;
  /** How long `.journal/` must have been unchanged for a listing of it to be reused (by its file system, looked up once). */
  private journalSettledMs: number | undefined;

  constructor(options: FileStoreOptions) {
    this.location = path.resolve(options.dir);
    this.proposalsDir = path.join(this.location, 'proposals');
    this.prefix = this.location.endsWith(path.sep) ? this.location : `${this.location}${path.sep}`;
    this.ledgers = options.ledgers;
    this.marks = options.marks ?? [];
    this.key = options.key;
    this.owners = new OwnerFiles(path.join(this.location, '.owners'), options.leaseMs);
    this.answers = new FileAnswerCache(path.join(this.location, 'cache'));
    this.cache = this.answers;
  }

  async exists(): Promise<boolean> {
    try {
      return readdirSync(this.location).length > 0;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.answers.close();
    for (const held of this.claims.values()) await held.release();
    this.claims.clear();
    this.listed = undefined;
    this.queues.clear();
    const stop = this.stopSupply;
    this.stopSupply = undefined;
    await stop?.();
  }

  // ---------------------------------------------------------------- paths and directories

  private proposalFile(id: string): string {
    assertId(id);
    return `${this.prefix}proposals${path.sep}${id}.json`;
  }

  private entryFile(collection: string, id: string): string {
    assertCollection(collection);
    assertId(id);
    return `${this.prefix}${collection}${path.sep}${id}.json`;
  }

  private ledgerFile(ledger: string): string {
    const name = ledger === 'events' ? AUDIT_FILE : this.ledgers[ledger];
    if (name === undefined) throw new Error(`unknown ledger "${ledger}"`);
    return path.join(this.location, name);
  }

  private lockFile(name: string): string {
    return path.join(this.location, '.locks', name);
  }

  private claimFile(stage: string, key: string): string {
    if (!STAGE_NAME.test(stage)) throw new Error(`invalid stage name: ${JSON.stringify(stage)}`);
    return path.join(this.location, '.claims', stage, isUlid(key) ? key : keyFileName(key));
  }

  /**
   * A directory of the store, each part of its path checked (created when `create`): a link, a
   * file or anything else in the place of one of its directories is refused, so nothing is ever
   * read or written through a link out of the store. Every write checks again (`realDir`), even in
   * a long run: checked once per process, a directory moved out and linked back mid-run had the
   * run's claims and pool entries written, and files deleted, outside the store. A read keeps what
   * this process has checked (a read writes nothing, and a file read is a proposal only when its
   * own id says so). One `lstat` a part; the store's own directory may be a link (the user chose
   * where it lives).
   */
  private dir(dir: string, create: boolean): boolean {
    if (!create && this.checkedDirs.has(dir)) return true;
    if (!this.located) {
      if (!existsSync(this.location)) {
        if (!create) return false;
        mkdirSync(this.location, { recursive: true });
      }
      this.located = true;
    }
    for (const current of this.partsOf(dir)) {
      if (isRealDirectory(current)) continue;
      if (!create) return false;
      try {
        mkdirSync(current);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (!isRealDirectory(current)) return false;
    }
    this.checkedDirs.add(dir);
    return true;
  }

  /** The paths from the store's directory down to `dir` (below the store's own), worked out once. */
  private partsOf(dir: string): string[] {
    let parts = this.dirParts.get(dir);
    if (parts === undefined) {
      parts = [];
      const relative = path.relative(this.location, dir);
      let current = this.location;
      for (const part of relative === '' ? [] : relative.split(path.sep)) parts.push((current = path.join(current, part)));
      this.dirParts.set(dir, parts);
    }
    return parts;
  }

  /** `dir`, made if missing; throws when something else is in its place (nothing is written through it). */
  private realDir(dir: string): void {
    if (!this.dir(dir, true)) throw new NotRegularFile(dir, 'not a directory', 'a directory');
  }

  // ---------------------------------------------------------------- reading

  async read(id: string): Promise<ReadResult> {
    const file = this.proposalFile(id);
    if (!this.dir(this.proposalsDir, false)) return { kind: 'missing' };
    let text: string | undefined;
    try {
      text = readRegular(file, DOCUMENT_MAX_BYTES);
    } catch (error) {
      if (error instanceof NotRegularFile) return { kind: 'malformed', reason: notRegularReason(error) };
      if (error instanceof TooLarge) return { kind: 'malformed', reason: `larger than ${DOCUMENT_MAX_BYTES / (1024 * 1024)} MiB` };
      throw error; // (one this user may not read: said as such, naming it — see describeFileStoreFailure)
    }
    if (text === undefined) return { kind: 'missing' };
    return parseDocument(id, text);
  }

  private async scan(readsListed?: ReadsListed): Promise<ProposalScan> {
    if (!this.dir(this.proposalsDir, false)) return { length: 0, id: () => '', status: () => null, marks: () => 0 };
    return scanProposals(this.proposalsDir, path.join(this.location, '.index', 'proposals.tsv'), this.marks, readsListed);
  }

  private markMask(field: string | undefined): number {
    if (field === undefined) return 0;
    const bit = this.marks.indexOf(field);
    if (bit < 0) throw new Error(`the store does not index the field "${field}"`);
    return 1 << bit;
  }

  index(query: Query = {}): AsyncIterable<IndexEntry> {
    if (query.after !== undefined) return this.indexed(query);
    this.listed = undefined;
    // A write of this handle's under way may land after the scan with its audit row still to come.
    const audit = this.inFlight === 0 ? this.auditSignature() : undefined;
    return this.indexed(query, undefined, audit === undefined ? undefined : new Listing(statusesOf(query), query.without, audit, this.writes));
  }

  /** `listing`: filled with what is yielded, and kept for the claim pass that may follow when the caller reads to the end. */
  private async *indexed(query: Query, readsListed?: ReadsListed, listing?: Listing): AsyncIterable<IndexEntry> {
    const scan = await this.scan(readsListed);
    const mask = this.markMask(query.without);
    const wanted = statusFilter(query);
    for (let i = 0; i < scan.length; i++) {
      const status = scan.status(i);
      if (status !== null && !wanted(status)) continue;
      const marks = scan.marks(i);
      if (status !== null && (marks & mask) !== 0) continue;
      const id = scan.id(i);
      if (query.after !== undefined && id <= query.after) continue;
      if (status !== null) listing?.add(id, marks);
      yield { id, status, marks: this.marks.filter((_field, bit) => (marks & (1 << bit)) !== 0) };
    }
    if (listing?.complete()) this.listed = listing;
  }

  /** The audit log's identity and size (every committed transition, by any process, appends to it); undefined when it cannot be looked at. */
  private auditSignature(): string | undefined {
    try {
      const stat = lstatSync(path.join(this.location, AUDIT_FILE), { throwIfNoEntry: false });
      return stat ? `${stat.dev}:${stat.ino}:${stat.size}:${stat.mode}` : '';
    } catch {
      return undefined; // the store is not a directory, or cannot be searched: the listing says so
    }
  }

  /**
   * The queue of a claim pass from the listing just made of the same proposals (a run's
   * selection), instead of listing the store a second time — once, and only while nothing was
   * committed since it began: the audit log has not grown (no transition, by any process, and no
   * finished repair) and this handle began no write (a commit, or a replay of a dead journal,
   * which can stop partway with the document in place and no audit row) — and none of its writes
   * was running when the listing began (`index` keeps none then). A proposal that changes
   * meanwhile is read under its claim anyway; one that turns up without an audit row (a file put
   * in place by hand, another process's commit whose row is not written yet, or that was killed
   * or whose replay stopped between its document and its row) is the next run's, as work that
   * appears after the selection always is.
   */
  private listedQueue(query: Query): string[] | undefined {
    const listed = this.listed;
    this.listed = undefined;
    if (!listed || listed.statuses !== statusesOf(query) || listed.writes !== this.writes) return undefined;
    // A listing that left out marked proposals serves only a queue that leaves out the same.
    if (listed.without !== undefined && listed.without !== query.without) return undefined;
    if (listed.audit !== this.auditSignature()) return undefined;
    return listed.ids(listed.without === query.without ? 0 : this.markMask(query.without));
  }

  async *list(query: Query = {}): AsyncIterable<Listed> {
    const wanted = statusFilter(query);
    // Each entry is read below and kept by its own status: the scan need not stat those it would
    // list by their indexed status (unless a mark is to leave some out, which only the index knows).
    for await (const entry of this.indexed(query, query.without === undefined ? wanted : undefined)) {
      const read = await this.read(entry.id);
      if (read.kind === 'malformed') yield { kind: 'malformed', id: entry.id, reason: read.reason };
      else if (read.kind === 'found' && wanted(read.stored.proposal['status'])) yield read;
    }
  }

  async counts(states: readonly string[]): Promise<Counts> {
    const scan = await this.scan();
    // Null prototypes: a status named "constructor" or "__proto__" is just a name.
    const counts: Record<string, number> = Object.assign(Object.create(null) as Record<string, number>, Object.fromEntries(states.map((state) => [state, 0])));
    const unknown = Object.create(null) as Record<string, number>;
    const malformed: string[] = [];
    for (let i = 0; i < scan.length; i++) {
      const status = scan.status(i);
      if (status === null) malformed.push(scan.id(i));
      else if (Object.hasOwn(counts, status)) counts[status]!++;
      else unknown[status] = (unknown[status] ?? 0) + 1;
    }
    return { counts: { ...counts }, malformed, unknown };
  }

  async keyHandled(key: string): Promise<{ by: 'proposal'; id: string } | { by: 'ledger' } | undefined> {
    const owner = await this.keyOwner(key);
    if (owner !== undefined) return { by: 'proposal', id: owner };
    // Asked of the ledgers each time (they are read only from where the last question ended):
    // another run may have just declined the record.
    for (const ledger of this.key?.ledgers ?? []) {
      if (this.ledgerIndex.has(this.ledgerFile(ledger), this.key!.field, key)) return { by: 'ledger' };
    }
    return undefined;
  }

  private markerFile(key: string): string {
    return path.join(this.location, '.index', 'keys', keyFileName(key));
  }

  private async keyOwner(key: string): Promise<string | undefined> {
    const marker = this.markerFile(key);
    // (A link where `.index` or `keys` belongs is refused, naming it: a marker is never read or removed through one.)
    if (!this.dir(path.dirname(marker), false)) return undefined;
    let text: string | undefined;
    try {
      text = readRegular(marker);
    } catch {
      text = undefined;
    }
    if (text === undefined) return undefined;
    const owner = parseKeyMarker(text);
    if (!owner) return undefined;
    if ((await this.read(owner.id)).kind !== 'missing') return owner.id;
    // The marker's proposal was never written: its creator died before, or is writing it now.
    if (isAlive(owner)) return owner.id;
    // Or it died with the creation journaled but not applied: finish that before deciding.
    if ((await this.replayDead()) > 0 && (await this.read(owner.id)).kind !== 'missing') return owner.id;
    try {
      unlinkSync(marker);
    } catch {
      // gone already, or a read-only store
    }
    return undefined;
  }

  async *ledger(ledger: string): AsyncIterable<Record<string, unknown>> {
    const text = readRegular(this.ledgerFile(ledger));
    if (text !== undefined) yield* parseJsonLines(text);
  }

  async *audit(options: { id?: string } = {}): AsyncIterable<AuditRow> {
    const text = readRegular(path.join(this.location, AUDIT_FILE));
    if (text === undefined) return;
    const needle = options.id === undefined ? undefined : `"id":${JSON.stringify(options.id)}`;
    for (const line of text.split('\n')) {
      if (!line || (needle !== undefined && !line.includes(needle))) continue;
      try {
        const row = JSON.parse(line) as AuditRow;
        if (row && typeof row === 'object' && (options.id === undefined || row.id === options.id)) yield row;
      } catch {
        // a torn line is not a row
      }
    }
  }

  async lastAudit(id: string): Promise<AuditRow | undefined> {
    // The index of last rows says whether the proposal has any and where its last row starts: one
    // short read. Should that line not be the proposal's row (a log edited by hand), the log is
    // scanned backwards from the end instead.
    const log = path.join(this.location, AUDIT_FILE);
    const last = await readAuditIndex(log, path.join(this.location, '.index', 'audit.tsv'), this.auditMemo);
    const entry = last.get(id);
    if (!entry) return undefined;
    return rowAt(log, entry.at, id) ?? lastRowOf(log, id);
  }

  async changes(cursor?: string): Promise<{ all: boolean; ids: string[]; cursor: string }> {
    const log = path.join(this.location, AUDIT_FILE);
    const stat = lstatSync(log, { throwIfNoEntry: false });
    const ino = stat?.isFile() ? stat.ino : 0;
    const size = stat?.isFile() ? stat.size : 0;
    const match = /^f1:(\d+):(\d+)$/.exec(cursor ?? '');
    // A cursor taken before the log existed (inode 0) reads the new log from its start.
    const sameLog = match !== null && (Number(match[1]) === ino || (Number(match[1]) === 0 && Number(match[2]) === 0));
    if (!match || !sameLog || Number(match[2]) > size) return { all: true, ids: [], cursor: `f1:${ino}:${size}` };
    const offset = Number(match[2]);
    const tail = readRegularFrom(log, offset);
    const end = tail.lastIndexOf(0x0a) + 1;
    const ids = new Set<string>();
    for (const line of tail.subarray(0, end).toString('utf8').split('\n')) {
      const id = /"id":"([0-7][0-9A-HJKMNP-TV-Z]{25})"/.exec(line)?.[1];
      if (id) ids.add(id);
    }
    return { all: false, ids: [...ids].sort(), cursor: `f1:${ino}:${offset + end}` };
  }

  async readEntry(collection: string, id: string): Promise<unknown | undefined> {
    let text: string | undefined;
    try {
      text = readRegular(this.entryFile(collection, id), DOCUMENT_MAX_BYTES);
    } catch (error) {
      if (error instanceof NotRegularFile || error instanceof TooLarge) return null;
      throw error;
    }
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return null;
    }
  }

  async *entries(collection: string): AsyncIterable<string> {
    assertCollection(collection);
    const dir = path.join(this.location, collection);
    if (!this.dir(dir, false)) return;
    yield* readdirSync(dir)
      .filter((name) => /^[0-7][0-9A-HJKMNP-TV-Z]{25}\.json$/.test(name))
      .map((name) => name.slice(0, 26))
      .sort();
  }

  // ---------------------------------------------------------------- writing

  /** A write that changes proposals, counted while it runs (see `index`) and once begun (`writes`). */
  private async writing<T>(body: () => Promise<T>): Promise<T> {
    this.inFlight++;
    this.writes++;
    try {
      return await body();
    } finally {
      this.inFlight--;
    }
  }

  /** Before this process's first write: finish what dead writers left unfinished. */
  private async beforeWrite(): Promise<void> {
    // Temp files made ahead by another thread (temp-supply.ts); PIPELINE_TEMP_SUPPLY=off measures without.
    if (process.env['PIPELINE_TEMP_SUPPLY'] !== 'off') this.stopSupply ??= useTempSupply(this.location, this.owners.name);
    this.recovered ??= this.replayDead();
    await this.recovered;
  }

  private journalOf(owner: Partial<ProcessIdentity> | null): string | undefined {
    if (!owner || owner.pid === undefined) return undefined;
    const file = path.join(this.location, '.journal', `${ownerFileName(owner)}.jsonl`);
    return lstatSync(file, { throwIfNoEntry: false }) ? file : undefined;
  }

  /** Take a proposal's commit lock; a dead holder's unfinished commit is finished first. */
  private async lockProposal(id: string, replaying = false): Promise<Held> {
    this.realDir(path.join(this.location, '.locks'));
    const file = this.lockFile(`${id}.lock`);
    const start = Date.now();
    let delay = 1;
    for (;;) {
      const attempt = this.owners.attempt(file, (owner) => replaying || this.journalOf(owner) === undefined);
      if ('held' in attempt) return attempt.held;
      if (attempt.holder === 'stale') {
        this.forgetSightings(); // its owner was just found dead: do not trust an older sighting
        await this.replayDead();
        const left = this.journalOf(attempt.owner);
        if (left !== undefined) throw new Error(`cannot finish the interrupted commits in ${left}`);
        continue;
      }
      // A directory planted where the lock belongs is never anyone's lock and cannot be taken over.
      if (lstatSync(file, { throwIfNoEntry: false })?.isDirectory()) throw new NotRegularFile(file, 'a directory');
      if (Date.now() - start > 15_000) throw new Busy(`${id} is locked by another process for over 15 s; nothing was written`);
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 50);
    }
  }

  private journalFor(): Journal {
    this.realDir(path.join(this.location, '.journal'));
    this.journal ??= new Journal(path.join(this.location, '.journal'), this.owners.name);
    return this.journal;
  }

  /** Log sizes now, so a replay knows where this commit's rows would start. */
  private offsets(ledgers: readonly LedgerWrite[]): Record<string, number> {
    const offsets: Record<string, number> = { [AUDIT_FILE]: sizeOf(path.join(this.location, AUDIT_FILE)) };
    for (const { ledger } of ledgers) {
      const file = this.ledgers[ledger];
      if (file === undefined) throw new Error(`unknown ledger "${ledger}"`);
      offsets[file] = sizeOf(path.join(this.location, file));
    }
    return offsets;
  }

  async create(input: NewProposal): Promise<CreateResult> {
    return this.writing(() => this.createNow(input));
  }

  private async createNow(input: NewProposal): Promise<CreateResult> {
    const { proposal, key, audit } = input;
    const id = proposal.id;
    assertId(id);
    await this.beforeWrite();
    this.realDir(this.proposalsDir);
    this.realDir(path.join(this.location, '.index', 'keys'));
    const marker = this.markerFile(key);
    for (let attempt = 0; ; attempt++) {
      try {
        await writeFileAtomic(marker, JSON.stringify({ id, key, ...this.owners.identity }), { exclusive: true });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw error;
        const existing = await this.keyOwner(key);
        if (existing !== undefined) return { ok: false, reason: 'key_exists', existing };
      }
    }
    const text = serializeProposal(proposal);
    const held = await this.lockProposal(id);
    try {
      const intent: Intent = { kind: 'create', id, next: text, audit: [audit], ledger: [], entries: [], offsets: this.offsets([]) };
      await this.apply(
        intent,
        () => writeTemp(this.proposalFile(id), text),
        async (temp) => {
          install(temp, this.proposalFile(id), true);
          await fsyncDir(this.proposalsDir);
        },
      );
    } finally {
      await held.release();
    }
    return { ok: true, version: text };
  }

  async commit(change: Change): Promise<CommitResult> {
    return this.writing(() => this.commitNow(change));
  }

  private async commitNow(change: Change): Promise<CommitResult> {
    const { id } = change;
    const file = this.proposalFile(id);
    if (change.audit.length === 0) throw new Error('a commit records at least one audit row');
    await this.beforeWrite();
    const held = await this.lockProposal(id);
    try {
      // The document's directory is a real one now, not only when it was last used (a link moved in
      // since is refused here, before anything is read through it or written).
      this.realDir(this.proposalsDir);
      if (change.lease && !this.owners.holds(this.claimFile(change.lease.stage, change.lease.key))) return { ok: false, reason: 'lease' };
      let current: string | undefined;
      try {
        current = readRegular(file, DOCUMENT_MAX_BYTES);
      } catch (error) {
        // Replaced since it was read by something no commit applies to (a link, a FIFO, a file past any proposal's size).
        if (error instanceof NotRegularFile || error instanceof TooLarge) return { ok: false, reason: 'changed' };
        throw error;
      }
      if (current === undefined) return { ok: false, reason: 'missing' };
      if (current !== change.version) return { ok: false, reason: 'changed' };
      const entries: EntryIntent[] = [];
      for (const write of change.entries ?? []) {
        // Every directory an entry goes into or leaves is a real one (a link there is refused
        // here, before anything is written, not halfway through the commit).
        for (const collection of write.op === 'put' ? [write.collection] : [write.from, write.to])
          this.realDir(path.dirname(this.entryFile(collection, write.id)));
        if (write.op === 'put') {
          // An entry is never overwritten: one already there (a promotion finished by hand) stays.
          if (lstatSync(this.entryFile(write.collection, write.id), { throwIfNoEntry: false })) continue;
          entries.push({ op: 'put', collection: write.collection, id: write.id, text: `${JSON.stringify(write.entry, null, 2)}\n` });
        } else {
          const source = this.entryFile(write.from, write.id);
          if (!lstatSync(source, { throwIfNoEntry: false })?.isFile())
            return { ok: false, reason: 'entry', detail: `${write.from}/${write.id}.json is missing` };
          if (lstatSync(this.entryFile(write.to, write.id), { throwIfNoEntry: false }))
            return { ok: false, reason: 'entry', detail: `${write.to}/${write.id}.json exists already` };
          entries.push(write);
        }
      }
      const ledger = (change.ledger ?? []).filter(
        (write) => write.once === undefined || !this.ledgerIndex.has(this.ledgerFile(write.ledger), write.once, write.row[write.once]),
      );
      const text = serializeProposal(change.next);
      const intent: Intent = { kind: 'commit', id, prev: sha256(current), next: text, audit: change.audit, ledger, entries, offsets: this.offsets(ledger) };
      await this.apply(
        intent,
        () => writeTemp(file, text),
        async (temp) => {
          install(temp, file);
          // The directory's sync runs while the entries are written.
          const synced = fsyncDir(this.proposalsDir);
          // Handled at once: it may fail while the entries are written, and an unhandled rejection
          // ends the process (it is still awaited, and its failure thrown, below).
          synced.catch(() => undefined);
          await Promise.all([synced, ...(await this.writeEntries(entries))]);
        },
      );
      return { ok: true, version: text };
    } finally {
      await held.release();
    }
  }

  /**
   * Journal the intent, write the document (and entries), then the ledger rows and audit rows.
   * The document's temp file is written and synced (`prepare`) while the intent is made durable:
   * nobody reads a temp file, and it goes into place (`writeDocument`) only once the intent is
   * durable — one sync's wait less per commit. A temp file whose intent could not be written is
   * removed; one left by a crash is swept by its dead writer's pid.
   */
  private async apply(intent: Intent, prepare: () => Promise<string>, writeDocument: (temp: string) => Promise<void>): Promise<void> {
    const journal = this.journalFor();
    const prepared = prepare();
    prepared.catch(() => undefined); // awaited below, once the intent is durable
    try {
      await journal.write(intent);
    } catch (error) {
      await prepared.then(unlinkQuietly, () => undefined);
      throw error;
    }
    let applied = false;
    try {
      const temp = await prepared;
      failpoint('journaled');
      await writeDocument(temp);
      failpoint('document');
      // The document and entries are durable before the audit rows mark the commit as done.
      await Promise.all(intent.ledger.map((write) => this.appendRows(this.ledgerFile(write.ledger), [write.row])));
      failpoint('ledger');
      await this.appendRows(path.join(this.location, AUDIT_FILE), intent.audit);
      failpoint('audit');
      applied = true;
    } finally {
      // A commit that failed halfway keeps its intent: the journal stays for a replay to finish it.
      journal.done(applied);
    }
  }

  /** Write entries (temp, link into place; moves link then unlink); returns the directory syncs to wait for. */
  private async writeEntries(entries: readonly EntryIntent[]): Promise<Promise<void>[]> {
    const syncs: Promise<void>[] = [];
    for (const entry of entries) {
      if (entry.op === 'put') {
        const target = this.entryFile(entry.collection, entry.id);
        this.realDir(path.dirname(target));
        try {
          install(await writeTemp(target, entry.text), target, true);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        syncs.push(fsyncDir(path.dirname(target)));
      } else {
        const source = this.entryFile(entry.from, entry.id);
        const target = this.entryFile(entry.to, entry.id);
        this.realDir(path.dirname(target));
        moveEntry(source, target);
        syncs.push(fsyncDir(path.dirname(source)), fsyncDir(path.dirname(target)));
      }
    }
    return syncs;
  }

  /**
   * Append rows as whole lines in one write, starting on a fresh line, and make them durable. A
   * log that ends mid-line (a writer was killed halfway through its append, or a crash cut it)
   * gets its newline first, under a lock, so two processes never both add one (an empty line).
   * The check and the write are two system calls: a writer killed between them can still leave
   * half a line that this append is glued to (a window of microseconds, where until 2026-12-07 it
   * was a process's whole life after its first append to the log).
   */
  private async appendRows(file: string, rows: readonly Record<string, unknown>[] | readonly AuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    this.realDir(this.location);
    const text = rows.map((row) => `${JSON.stringify(row)}\n`).join('');
    for (;;) {
      const { created, midLine } = await appendDurably(file, text, { afterLine: true });
      if (created) await fsyncDir(this.location);
      if (!midLine) return;
      await this.atTail(file, () => endLine(file));
    }
  }

  /**
   * Finish a row that the dead writer of a commit began: its write was cut at a page boundary
   * (`finishTornLine`), so the rest of the row's bytes are appended and the row is whole, as its
   * commit wrote it — not a second row beside half of one. False (nothing finished, or the row
   * found broken afterwards) leaves the row to `appendRows`.
   */
  private async finishRow(file: string, offset: number, row: object): Promise<boolean> {
    return this.atTail(file, () => finishTornLine(file, offset, Buffer.from(`${JSON.stringify(row)}\n`)));
  }

  /** Run `fix` on the end of a log under its tail lock (see `appendRows`). */
  private async atTail<T>(file: string, fix: () => T | Promise<T>): Promise<T> {
    this.realDir(path.join(this.location, '.locks'));
    const held = await this.owners.acquire(this.lockFile(`${path.basename(file)}.tail`));
    try {
      return await fix();
    } finally {
      await held.release();
    }
  }

  async appendLedger(ledger: string, row: Record<string, unknown>): Promise<void> {
    await this.appendRows(this.ledgerFile(ledger), [row]);
  }

  async prepareDocuments(collection: string): Promise<void> {
    assertCollection(collection);
    const dir = path.join(this.location, collection);
    // (A link or a file there throws, naming it; anything else that is no directory is named here.)
    this.realDir(dir);
  }

  async writeDocument(collection: string, name: string, document: unknown): Promise<'written' | 'exists'> {
    assertCollection(collection);
    if (!DOCUMENT_NAME.test(name)) throw new Error(`invalid document name: ${JSON.stringify(name)}`);
    const dir = path.join(this.location, collection);
    this.realDir(dir);
    try {
      await writeFileAtomic(path.join(dir, name), `${JSON.stringify(document, null, 2)}\n`, { exclusive: true });
      return 'written';
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
      throw error;
    }
  }

  // ---------------------------------------------------------------- copying

  async *dump(): AsyncIterable<Dumped> {
    const keyField = this.key?.field;
    for await (const entry of this.indexed({})) {
      const text = this.readToCopy(this.proposalFile(entry.id));
      if (text === undefined) continue;
      const read = parseDocument(entry.id, text);
      const key = read.kind === 'found' && keyField !== undefined ? read.stored.proposal[keyField] : undefined;
      yield { kind: 'proposal', id: entry.id, key: typeof key === 'string' ? key : null, text };
    }
    for await (const row of this.audit()) yield { kind: 'audit', row };
    for (const ledger of Object.keys(this.ledgers)) for await (const row of this.ledger(ledger)) yield { kind: 'ledger', ledger, row };
    const names = existsSync(this.location) ? readdirSync(this.location, { withFileTypes: true }) : [];
    for (const dir of names
      .filter((entry) => entry.isDirectory() && COLLECTION_NAME.test(entry.name) && !RESERVED_COLLECTIONS.includes(entry.name))
      .map((entry) => entry.name)
      .sort()) {
      for (const name of readdirSync(path.join(this.location, dir)).sort()) {
        if (name.startsWith('.')) continue;
        const text = this.readToCopy(path.join(this.location, dir, name));
        if (text === undefined) continue;
        if (/^[0-7][0-9A-HJKMNP-TV-Z]{25}\.json$/.test(name)) yield { kind: 'entry', collection: dir, id: name.slice(0, 26), text };
        else if (DOCUMENT_NAME.test(name)) yield { kind: 'document', collection: dir, name, text };
      }
    }
  }

  /**
   * A file of the store as a copy takes it (undefined when it is gone). One that cannot be taken
   * whole — a link, a FIFO, a file past any document's size, one this user may not read — stops the
   * copy, naming it: a copy that left it out would not be the store it says it copied.
   */
  private readToCopy(file: string): string | undefined {
    try {
      return readRegular(file, DOCUMENT_MAX_BYTES);
    } catch (error) {
      const why =
        error instanceof NotRegularFile
          ? error.what
          : error instanceof TooLarge
            ? `larger than ${DOCUMENT_MAX_BYTES / (1024 * 1024)} MiB`
            : (systemReason(error) ?? String((error as Error).message ?? error));
      throw new PipelineError('store.uncopyable', `${file} cannot be copied whole (${why}), so nothing was copied`, {
        hint: `no command reads it as a document of the store: move it out of ${this.location}, then copy again`,
      });
    }
  }

  async load(items: AsyncIterable<Dumped>): Promise<void> {
    if (await this.exists()) throw new Error(`${this.location} is not empty`);
    this.writes++;
    this.realDir(this.proposalsDir);
    this.realDir(path.join(this.location, '.index', 'keys'));
    const dirs = new Set<string>([this.proposalsDir, path.join(this.location, '.index', 'keys'), this.location]);
    const logs = new Map<string, string[]>();
    const flush = (file: string) => {
      const lines = logs.get(file);
      if (lines?.length) appendText(file, lines.join(''));
      logs.set(file, []);
    };
    const append = (file: string, row: object) => {
      const lines = logs.get(file) ?? [];
      lines.push(`${JSON.stringify(row)}\n`);
      logs.set(file, lines);
      if (lines.length >= 5000) flush(file);
    };
    for await (const item of items) {
      switch (item.kind) {
        case 'proposal': {
          await writeFileAtomic(this.proposalFile(item.id), item.text, { durable: false, exclusive: true });
          if (item.key !== null)
            await writeFileAtomic(this.markerFile(item.key), JSON.stringify({ id: item.id, key: item.key, ...this.owners.identity }), {
              durable: false,
              exclusive: true,
            });
          break;
        }
        case 'audit':
          append(path.join(this.location, AUDIT_FILE), item.row);
          break;
        case 'ledger':
          append(this.ledgerFile(item.ledger), item.row);
          break;
        case 'entry':
        case 'document': {
          assertCollection(item.collection);
          const dir = path.join(this.location, item.collection);
          this.realDir(dir);
          dirs.add(dir);
          const name = item.kind === 'entry' ? `${item.id}.json` : item.name;
          if (item.kind === 'entry') assertId(item.id);
          else if (!DOCUMENT_NAME.test(item.name)) throw new Error(`invalid document name: ${JSON.stringify(item.name)}`);
          await writeFileAtomic(path.join(dir, name), item.text, { durable: false, exclusive: true });
          break;
        }
      }
    }
    for (const file of logs.keys()) flush(file);
    // Made durable once, at the end: a copy that is cut short is started again into an empty store.
    await Promise.all([...logs.keys()].map((file) => groupSync(file, true)));
    for (const dir of dirs) {
      for (const name of readdirSync(dir)) {
        const file = path.join(dir, name);
        if (lstatSync(file).isFile()) await groupSync(file, true);
      }
      await fsyncDir(dir);
    }
  }

  // ---------------------------------------------------------------- crash recovery

  /**
   * Finish the commits dead processes left half-done (cheap when there are none: one listing of
   * the journals). With `sweep` (a run's start), also remove the temp and owner files of dead
   * processes — a listing of every directory, which a single command has no need to pay for.
   */
  async recover(options: { sweep?: boolean } = {}): Promise<number> {
    if (options.sweep && !this.swept && existsSync(this.location)) {
      this.swept = true;
      const subdirs = await fs.readdir(this.location, { withFileTypes: true }).catch(() => []);
      const claims = await fs.readdir(path.join(this.location, '.claims')).catch(() => []);
      // Directories below the store's own are swept only when each part of their path is a real
      // directory (a link there is never listed or removed through).
      const real = (dir: string) => {
        try {
          return this.dir(dir, false);
        } catch {
          return false;
        }
      };
      await sweepTemps([
        ...subdirs.filter((entry) => entry.isDirectory()).map((entry) => path.join(this.location, entry.name)),
        ...[path.join(this.location, '.index', 'keys'), ...claims.map((stage) => path.join(this.location, '.claims', stage))].filter(real),
      ]);
      sweepTempSupplies(path.join(this.location, '.tmp'), (owner) => this.owners.alive(owner));
      this.owners.sweep();
    }
    return this.replayDead();
  }

  /** An owner was found dead: owners seen alive and the journals listed are looked at again. */
  private forgetSightings(): void {
    this.seenAlive.clear();
    this.journalListing = undefined;
  }

  private ownerAlive(name: string): boolean {
    const seen = this.seenAlive.get(name);
    if (seen !== undefined && Date.now() - seen < 1000) return true;
    if (!this.owners.alive(name)) return false;
    this.seenAlive.set(name, Date.now());
    return true;
  }

  /**
   * The names in `.journal/`. Every commit asks (through `recover`), so a listing is reused while
   * the directory is unchanged — same device, inode, modification and change times — if it was
   * taken well after the last change by this host's clock (so a journal created within the same
   * timestamp tick cannot hide behind an unchanged time: `JOURNAL_LISTING_SETTLED_MS`, which a
   * short run also outlives — a listing on each of its commits cost a batch run's profile some
   * 5 %), and for less than a second: as a sighting
   * of a live owner is trusted for a second, which also bounds what a file system on another
   * clock, or with coarse timestamps, could hide. Anything else lists again.
   */
  private journalNames(fresh: boolean): string[] {
    const dir = path.join(this.location, '.journal');
    let stat: Stats;
    try {
      stat = statSync(dir);
    } catch {
      this.journalListing = undefined;
      return [];
    }
    const identity = `${stat.dev}:${stat.ino}:${stat.mtimeMs}:${stat.ctimeMs}`;
    const cached = this.journalListing;
    this.journalSettledMs ??= localFileSystem.test(dir) ? JOURNAL_LISTING_SETTLED_MS.local : JOURNAL_LISTING_SETTLED_MS.other;
    const changedAt = Math.max(stat.mtimeMs, stat.ctimeMs);
    if (!fresh && cached?.identity === identity && cached.listedAt - changedAt >= this.journalSettledMs && performance.now() - cached.listedTick < 1000) {
      journalListings.reused++;
      return cached.names;
    }
    journalListings.listed++;
    const listedAt = Date.now();
    const listedTick = performance.now();
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      this.journalListing = undefined;
      return [];
    }
    this.journalListing = { identity, listedAt, listedTick, names };
    return names;
  }

  /** Replay and remove the journals of dead processes, one replayer at a time. Returns the commits finished. */
  private async replayDead(): Promise<number> {
    const dead = (fresh = false) => this.journalNames(fresh).filter((name) => name.endsWith('.jsonl') && !this.ownerAlive(name.slice(0, -'.jsonl'.length)));
    if (dead().length === 0) return 0;
    // A replay that stops partway can leave a document in place without its audit row.
    return this.writing(() => this.replayDeadNow(dead));
  }

  private async replayDeadNow(dead: (fresh?: boolean) => string[]): Promise<number> {
    const dir = path.join(this.location, '.journal');
    this.realDir(path.join(this.location, '.locks'));
    const lock = await this.owners.acquire(this.lockFile('replay.lock'), 60_000);
    let finished = 0;
    try {
      for (const name of dead(true)) {
        const file = path.join(dir, name);
        // What cannot be finished (a link planted where the journal or an entry's directory
        // was, a ledger the configuration no longer has) is left in place, journal and all,
        // for the proposals it names: it never stops the rest of the store.
        let left = false;
        let intents: Intent[];
        try {
          intents = readIntents(file);
        } catch {
          continue;
        }
        for (const intent of intents) {
          if (!isUlid(intent.id)) continue;
          const held = await this.lockProposal(intent.id, true);
          try {
            if (await this.replay(intent)) finished++;
          } catch {
            left = true;
          } finally {
            await held.release();
          }
        }
        if (left) continue;
        try {
          unlinkSync(file);
        } catch (error) {
          // Its owner, exiting cleanly, removed it itself between our listing and now.
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    } finally {
      await lock.release();
    }
    return finished;
  }

  /**
   * Finish one intent, idempotently. Its audit rows are written last, after the document and
   * entries are durable: if any of them is in the log, the commit got that far and only missing
   * rows are added; if none is, nothing after the journal can be trusted and every step is done
   * again (the document only if it is still at the version the intent started from).
   */
  private async replay(intent: Intent): Promise<boolean> {
    // The document must be this proposal's, at the state its last audit row leads to — or the
    // intent was not written by a commit (edited, planted) and nothing of it is acted on.
    const document = parseDocument(intent.id, intent.next);
    if (document.kind !== 'found' || document.stored.proposal['status'] !== intent.audit.at(-1)?.to) return false;
    const ledgerFiles = intent.ledger.map((write) => this.ledgerFile(write.ledger)); // one not configured: left, before anything is written
    const auditFile = path.join(this.location, AUDIT_FILE);
    const auditFound = rowsAfter(auditFile, intent.offsets[AUDIT_FILE] ?? 0, intent.audit);
    const reached = auditFound.some(Boolean);
    let did = false;
    if (!reached) {
      const file = this.proposalFile(intent.id);
      let current: string | undefined;
      try {
        current = readRegular(file, DOCUMENT_MAX_BYTES);
      } catch {
        return false; // something that is not a file is there now: nothing true to finish
      }
      if (current !== intent.next) {
        const atStart = intent.kind === 'create' ? current === undefined : current !== undefined && sha256(current) === intent.prev;
        // Changed by hand since — or made unreadable by hand (the store's own writes are whole):
        // leave it, never overwrite it, invent nothing.
        if (!atStart) return false;
        this.realDir(this.proposalsDir);
        install(await writeTemp(file, intent.next), file);
        await fsyncDir(this.proposalsDir);
        did = true;
      }
      await Promise.all(await this.writeEntries(intent.entries.filter((entry) => this.entryPending(entry))));
    }
    for (const [index, write] of intent.ledger.entries()) {
      const ledgerFile = ledgerFiles[index]!;
      const offset = intent.offsets[path.basename(ledgerFile)] ?? 0;
      const [found] = rowsAfter(ledgerFile, offset, [write.row]);
      if (found) continue;
      if (!(await this.finishRow(ledgerFile, offset, write.row))) await this.appendRows(ledgerFile, [write.row]);
      did = true;
    }
    // The commit wrote its audit rows in one write: the first missing one may be half there.
    const first = auditFound.indexOf(false);
    if (first >= 0 && (await this.finishRow(auditFile, intent.offsets[AUDIT_FILE] ?? 0, intent.audit[first]!))) {
      auditFound[first] = true;
      did = true;
    }
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const missing = intent.audit.filter((_row, index) => !auditFound[index]).map((row) => ({ ...row, repaired: true as const, repaired_at: now }));
    if (missing.length) {
      await this.appendRows(auditFile, missing);
      did = true;
    }
    return did;
  }

  private entryPending(entry: EntryIntent): boolean {
    if (entry.op === 'put') return !lstatSync(this.entryFile(entry.collection, entry.id), { throwIfNoEntry: false });
    return lstatSync(this.entryFile(entry.from, entry.id), { throwIfNoEntry: false }) !== undefined;
  }

  // ---------------------------------------------------------------- leases

  async claim(stage: string, queue: Queue, max: number, _ttlMs: number): Promise<Claimed> {
    void _ttlMs; // a local owner holds while it lives; the store's lease time covers other hosts
    this.realDir(path.join(this.location, '.claims', stage));
    const leases: Lease[] = [];
    const take = async (key: string): Promise<void> => {
      const file = this.claimFile(stage, key);
      for (let attempt = 0; attempt < 2; attempt++) {
        // A dead holder's claim is taken over only once what it left half-committed is finished,
        // so the unit is read as that run left it (judged, say), not as it was before.
        const tried = this.owners.attempt(file, (owner) => this.journalOf(owner) === undefined);
        if ('held' in tried) {
          this.claims.set(file, tried.held);
          leases.push({ stage, key, token: this.owners.name });
          return;
        }
        if (tried.holder !== 'stale') return;
        this.forgetSightings();
        await this.replayDead();
      }
    };
    if ('keys' in queue) {
      for (const key of queue.keys) {
        if (leases.length >= max) break;
        await take(key);
      }
      return { leases };
    }
    // The queue's ids are listed once per pass (a claim without `after` starts a pass).
    const name = `${stage}\u0000${statusesOf(queue.query)}\u0000${queue.query.without ?? ''}`;
    let ids = this.queues.get(name);
    if (!ids || queue.query.after === undefined) {
      ids = queue.query.after === undefined ? this.listedQueue(queue.query) : undefined;
      if (!ids) {
        ids = [];
        for await (const entry of this.indexed({ ...queue.query, after: undefined })) if (entry.status !== null) ids.push(entry.id);
      }
      this.queues.set(name, ids);
    }
    let i = queue.query.after === undefined ? 0 : upperBound(ids, queue.query.after);
    for (; i < ids.length && leases.length < max; i++) await take(ids[i]!);
    return i < ids.length ? { leases, next: ids[i - 1]! } : { leases };
  }

  async renew(leases: readonly Lease[], _ttlMs: number): Promise<Lease[]> {
    void _ttlMs;
    this.owners.renew();
    return leases.filter((lease) => this.owners.holds(this.claimFile(lease.stage, lease.key)));
  }

  async release(leases: readonly Lease[]): Promise<void> {
    for (const lease of leases) {
      const file = this.claimFile(lease.stage, lease.key);
      const held = this.claims.get(file);
      this.claims.delete(file);
      await held?.release();
    }
  }

  async held(stage: string, queue: Queue): Promise<string[]> {
    const dir = path.join(this.location, '.claims', stage);
    if (!this.dir(dir, false)) return [];
    const names = new Set(readdirSync(dir));
    // Nothing claimed (the common end of a run): no need to list the queue.
    if (names.size === 0) return [];
    const out: string[] = [];
    const check = (key: string) => {
      const file = this.claimFile(stage, key);
      // A live holder's, and a dead one's: its work is taken over when the caller retries it.
      if (names.has(path.basename(file)) && ['live', 'stale'].includes(this.owners.holder(file))) out.push(key);
    };
    if ('keys' in queue) queue.keys.forEach(check);
    else for await (const entry of this.indexed(queue.query)) if (entry.status !== null) check(entry.id);
    return out.sort();
  }
}

/**
 * A listing of a query as it is read, kept for the claim pass that may follow it
 * (`FileStore.listedQueue`): the ids side by side in one buffer (26 bytes each, not a string
 * object each) and their marks, up to LISTING_MAX of them (a larger listing is not kept: the run
 * it starts is long enough that listing again is a small part of it).
 */
class Listing {
  private bytes = Buffer.allocUnsafe(ID_BYTES * 64);
  private marks = new Uint32Array(64);
  private count = 0;
  private full = false;

  constructor(
    readonly statuses: string,
    readonly without: string | undefined,
    /** The audit log (`auditSignature`) and the handle's writes begun, before the listing started. */
    readonly audit: string,
    readonly writes: number,
  ) {}

  add(id: string, marks: number): void {
    if (this.full) return;
    if (this.count === LISTING_MAX || id.length !== ID_BYTES) {
      this.full = true;
      this.bytes = Buffer.alloc(0);
      this.marks = new Uint32Array(0);
      return;
    }
    if (this.count === this.marks.length) {
      const bytes = Buffer.allocUnsafe(this.bytes.length * 2);
      this.bytes.copy(bytes);
      this.bytes = bytes;
      const grown = new Uint32Array(this.marks.length * 2);
      grown.set(this.marks);
      this.marks = grown;
    }
    this.bytes.write(id, this.count * ID_BYTES, 'latin1');
    this.marks[this.count++] = marks;
  }

  /** Read to its end and within bounds: worth keeping. */
  complete(): boolean {
    return !this.full;
  }

  /** The ids, in order, but those with any of the `mask` marks. */
  ids(mask: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.count; i++) if ((this.marks[i]! & mask) === 0) out.push(this.bytes.toString('latin1', i * ID_BYTES, (i + 1) * ID_BYTES));
    return out;
  }
}

/** An id's length (a ULID), and the most ids a listing keeps for a claim pass (with their marks, at most 8 MB). */
const ID_BYTES = 26;
const LISTING_MAX_DEFAULT = 200_000;
let LISTING_MAX = LISTING_MAX_DEFAULT;

/** For tests: keep listings of at most `count` ids for a claim pass. */
export function setListingMax(count = LISTING_MAX_DEFAULT): void {
  LISTING_MAX = count;
}

/** A query's statuses as one key (any order, any repeats): the proposals a listing and a queue are of. */
function statusesOf(query: Query): string {
  if (query.status === undefined) return '*';
  return JSON.stringify([...new Set([query.status].flat())].sort());
}

/** The first index in sorted `ids` whose id is greater than `after`. */
function upperBound(ids: readonly string[], after: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Move a file between directories byte for byte (link, then unlink); finishes a half-done move. */
function moveEntry(source: string, target: string): void {
  try {
    linkSync(source, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const here = lstatSync(source, { throwIfNoEntry: false });
    const there = lstatSync(target, { throwIfNoEntry: false });
    // Linked before a crash: the same inode under both names.
    if (!here || !there || here.ino !== there.ino) throw Object.assign(new Error(`${target} exists already`), { code: 'EEXIST' });
  }
  unlinkSync(source);
}

/** For each row, is an identical row in `file` after byte `offset`? */
function rowsAfter(file: string, offset: number, rows: readonly object[]): boolean[] {
  const wanted = rows.map((row) => JSON.stringify(row));
  const found = wanted.map(() => false);
  let tail: Buffer;
  try {
    tail = readRegularFrom(file, offset);
  } catch {
    return found;
  }
  for (const line of tail.toString('utf8').split('\n')) {
    let index = wanted.indexOf(line);
    if (index < 0 && line.includes('"repaired":true')) {
      // A row an earlier replay added (then was killed before removing the journal) counts too.
      try {
        const { repaired: _repaired, repaired_at: _at, ...row } = JSON.parse(line) as Record<string, unknown>;
        index = wanted.indexOf(JSON.stringify(row));
      } catch {
        // a torn line
      }
    }
    if (index >= 0) found[index] = true;
  }
  return found;
}

/** The last row of `id` in an audit log, scanning backwards from the end. */
/** The audit row of `id` that starts at byte `at` of the log, or undefined if that line is not one. */
function rowAt(file: string, at: number, id: string): AuditRow | undefined {
  const bytes = readRegularFrom(file, at, 1 << 16);
  const newline = bytes.indexOf(0x0a);
  if (newline < 0) return undefined;
  try {
    const row = JSON.parse(bytes.subarray(0, newline).toString('utf8')) as AuditRow;
    return row.id === id ? row : undefined;
  } catch {
    return undefined;
  }
}

function lastRowOf(file: string, id: string): AuditRow | undefined {
  const needle = `"id":${JSON.stringify(id)}`;
  const size = sizeOf(file);
  const chunk = 1 << 20;
  let end = size;
  let carry = '';
  while (end > 0) {
    const start = Math.max(0, end - chunk);
    const text = readRegularFrom(file, start, end - start).toString('utf8') + carry;
    end = start;
    const first = start === 0 ? 0 : text.indexOf('\n') + 1;
    carry = text.slice(0, first);
    const lines = text.slice(first).split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i]!;
      if (!line.includes(needle)) continue;
      try {
        const row = JSON.parse(line) as AuditRow;
        if (row.id === id) return row;
      } catch {
        // a torn line
      }
    }
  }
  return undefined;
}

function parseKeyMarker(text: string): ({ id: string } & Partial<ProcessIdentity>) | undefined {
  try {
    const value = JSON.parse(text) as { id?: unknown } & Partial<ProcessIdentity>;
    return typeof value.id === 'string' && isUlid(value.id) && typeof value.pid === 'number' ? { ...value, id: value.id } : undefined;
  } catch {
    return undefined;
  }
}
