/**
 * The file store's commit journal: before a commit touches the proposal file, the whole change —
 * the next document, its audit rows, ledger rows and pool-entry writes, and where each log ended
 * — is appended to the writing process's journal and made durable. A crash at any later point
 * leaves an intent that the next writer replays idempotently (see `FileStore.replay`), so a
 * commit lands whole or not at all, and the engine never repairs anything itself.
 *
 * One journal per process, not per proposal: concurrent commits share one data sync of one file
 * instead of creating, syncing and removing a file each. A journal belongs to the owner file of
 * the same name (`.owners/<name>`); once that owner is dead its journal is replayed and removed.
 */
import path from 'node:path';
import type { AuditRow, LedgerWrite } from './types.js';
import { fsyncDir, unlinkQuietly } from '../util/atomic-write.js';
import { appendDurably, isRealDirectory, parseJsonLines, readRegular } from './files.js';
import { isObject } from '../util/json-path.js';

/** A collection of pool entries (a directory of the store): the store refuses any other name. */
export const COLLECTION_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
/** Directories of the store that are never a collection of entries (a promote's `write`, a move, prune receipts). */
export const RESERVED_COLLECTIONS: readonly string[] = ['proposals', 'cache'];

/** Throw unless `collection` is a name a collection may have. */
export function assertCollectionName(collection: string): void {
  if (!COLLECTION_NAME.test(collection)) throw new Error(`invalid collection name: ${JSON.stringify(collection)}`);
}

export type EntryIntent = { op: 'put'; collection: string; id: string; text: string } | { op: 'move'; from: string; to: string; id: string };

/** One commit (or creation) as intended, enough to finish it after a crash. */
export interface Intent {
  kind: 'commit' | 'create';
  id: string;
  /** Digest of the version the commit was computed from (absent for a creation). */
  prev?: string;
  /** The proposal document as it is to be written. */
  next: string;
  audit: AuditRow[];
  ledger: LedgerWrite[];
  entries: EntryIntent[];
  /** Log file (relative to the store) → its size before this commit appended to it. */
  offsets: Record<string, number>;
}

/** Rotate a journal once it is this large and no commit of this process is in flight. */
const ROTATE_BYTES = 4 * 1024 * 1024;

export class Journal {
  readonly file: string;
  private created = false;
  private inFlight = 0;
  private bytes = 0;
  /** A commit failed after its intent was written: the journal must outlive this process. */
  private unfinished = false;

  constructor(
    private readonly dir: string,
    name: string,
  ) {
    this.file = path.join(dir, `${name}.jsonl`);
    removeAtExit(this);
  }

  /** Remove this journal — only from the store's own directory, never through a link swapped in for it. */
  private remove(): void {
    if (isRealDirectory(this.dir)) unlinkQuietly(this.file);
  }

  /** Append an intent and wait until it is durable. Call `done()` once the commit is applied. */
  async write(intent: Intent): Promise<void> {
    this.inFlight++;
    try {
      const line = `${JSON.stringify(intent)}\n`;
      const { created } = await appendDurably(this.file, line);
      this.bytes += line.length;
      if (created || !this.created) {
        this.created = true;
        await fsyncDir(this.dir);
      }
    } catch (error) {
      this.done();
      throw error;
    }
  }

  /**
   * A commit whose intent `write` made durable is over (call it exactly once after a successful
   * write): `applied` false when it failed halfway, and then this journal is never removed by
   * this process — the next writer after it replays the intent.
   */
  done(applied = true): void {
    this.inFlight--;
    if (!applied) this.unfinished = true;
    // Every intent in the file is applied and durable: the journal can start afresh.
    if (this.inFlight === 0 && !this.unfinished && this.bytes > ROTATE_BYTES) {
      this.remove();
      this.bytes = 0;
      this.created = false;
    }
  }

  /** At a clean exit: remove the journal when no commit is half-applied (else it is replayed). */
  closeAtExit(): void {
    if (this.inFlight === 0 && !this.unfinished) this.remove();
  }
}

const journals = new Set<Journal>();
function removeAtExit(journal: Journal): void {
  if (journals.size === 0) process.once('exit', () => journals.forEach((each) => each.closeAtExit()));
  journals.add(journal);
}

/**
 * The intents of a journal that may be unfinished: the last one of each proposal (a process
 * commits a proposal again only after its previous commit was applied and durable).
 */
export function readIntents(file: string): Intent[] {
  const text = readRegular(file);
  if (text === undefined) return [];
  const last = new Map<string, Intent>();
  for (const row of parseJsonLines(text)) if (isIntent(row)) last.set(row.id, row);
  return [...last.values()];
}

/** A collection name (as the store checks it) or a ledger name (as the configuration does: never the audit log's). */
const isName = (value: unknown): value is string => typeof value === 'string' && COLLECTION_NAME.test(value);
const isLedger = (value: unknown): value is string => typeof value === 'string' && /^[a-z][a-z0-9_-]*$/.test(value) && value !== 'events';

/**
 * Is a journal line an intent this version wrote? The journal is a file in the store like any
 * other: a line that is not exactly an intent (torn, edited, planted) is skipped, never acted on.
 */
function isIntent(value: unknown): value is Intent {
  if (!isObject(value)) return false;
  const { kind, id, prev, next, audit, ledger, entries, offsets } = value;
  if ((kind !== 'commit' && kind !== 'create') || typeof id !== 'string' || typeof next !== 'string') return false;
  if (kind === 'commit' ? typeof prev !== 'string' : prev !== undefined) return false;
  // Every row and entry must be of the proposal the intent names: a line cannot act on another.
  const ours = (row: unknown): row is Record<string, unknown> => isObject(row) && row['id'] === id;
  if (!Array.isArray(audit) || audit.length === 0 || !audit.every((row) => ours(row) && typeof row['to'] === 'string')) return false;
  if (!Array.isArray(ledger) || !ledger.every((write) => isObject(write) && isLedger(write['ledger']) && isObject(write['row']))) return false;
  const entry = (write: unknown) =>
    ours(write) &&
    (write['op'] === 'put'
      ? isName(write['collection']) && typeof write['text'] === 'string'
      : write['op'] === 'move' && isName(write['from']) && isName(write['to']));
  if (!Array.isArray(entries) || !entries.every(entry)) return false;
  return isObject(offsets) && Object.values(offsets).every((offset) => Number.isSafeInteger(offset) && (offset as number) >= 0);
}
