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
import { unlinkSync } from 'node:fs';
import path from 'node:path';
import type { AuditRow, LedgerWrite } from './types.js';
import { fsyncDir, groupSync } from '../util/atomic-write.js';
import { appendText, parseJsonLines, readRegular } from './files.js';

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

  /** Append an intent and wait until it is durable. Call `done()` once the commit is applied. */
  async write(intent: Intent): Promise<void> {
    this.inFlight++;
    try {
      const line = `${JSON.stringify(intent)}\n`;
      const { created } = appendText(this.file, line);
      this.bytes += line.length;
      if (created || !this.created) {
        this.created = true;
        await fsyncDir(this.dir);
      }
      await groupSync(this.file, true);
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
      unlinkQuietly(this.file);
      this.bytes = 0;
      this.created = false;
    }
  }

  /** At a clean exit: remove the journal when no commit is half-applied (else it is replayed). */
  closeAtExit(): void {
    if (this.inFlight === 0 && !this.unfinished) unlinkQuietly(this.file);
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
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
  for (const row of parseJsonLines(text)) {
    const intent = row as unknown as Intent;
    if (typeof intent.id === 'string' && typeof intent.next === 'string' && Array.isArray(intent.audit)) last.set(intent.id, intent);
  }
  return [...last.values()];
}
