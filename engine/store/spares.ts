/**
 * Spare inodes for replacing proposal files. A commit replaces a proposal by writing a temp file
 * and renaming it over the old one: that allocates an inode and frees one per commit, and on some
 * file systems (ext4 without a journal, mounted with `discard`, as on the development VM) those two
 * cost more than the write and its fsync together — on the event loop, since they are the cheap
 * synchronous calls everywhere else (files.ts).
 *
 * So a writer keeps the replaced file's inode under a temp name of its own (a hard link made just
 * before the rename) and, later, writes the next document into it instead of creating a file.
 * Rewriting a spare in place truncates nothing anyone reads: it is reused only when this process's
 * temp name is its only name (link count 1 — a file some backup also hard-linked is never
 * touched), it is still the inode that was kept, and it has the owner and mode a new temp file
 * would have. A crash leaves spares as temp files of a dead process, swept like any other.
 *
 * An inode is reused only once it has been a spare for `MIN_AGE_MS`: the write that reuses it then
 * sets an mtime no earlier version of that inode had (file systems stamp times from a coarse clock,
 * a few ms per tick), so the status index, which trusts (mtime, size, inode), always sees the change.
 */
import { closeSync, constants, fdatasync, fstatSync, ftruncateSync, linkSync, lstatSync, openSync, type Stats } from 'node:fs';
import { promisify } from 'node:util';
import { tempName, unlinkQuietly, writeAll } from '../util/atomic-write.js';

const { O_WRONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
const fdatasyncAsync = promisify(fdatasync);

/** How long an inode waits in the pool before it is written again (far above a clock tick). */
export const MIN_AGE_MS = 20;
/** Spares kept per directory at most; a replaced file beyond that is freed as before. */
const MAX_SPARES = 64;

interface Spare {
  file: string;
  ino: number;
  since: number;
}

const live = new Set<Spares>();
function removeAtExit(spares: Spares): void {
  if (live.size === 0) process.once('exit', () => live.forEach((each) => each.clear()));
  live.add(spares);
}

/** The spares of one directory (hard links cannot leave it, and a rename must stay in it). */
export class Spares {
  private readonly pool: Spare[] = [];
  /** Owner and mode of a file this process creates here (learnt from the first one installed). */
  private fresh: { uid: number; mode: number } | undefined;

  constructor() {
    removeAtExit(this);
  }

  /**
   * Write `data` into a spare and make it durable; returns the spare's
   * name, to be renamed over the target, or undefined when no spare is ready (write a temp file).
   */
  async write(data: Uint8Array): Promise<string | undefined> {
    const fresh = this.fresh;
    if (!fresh) return undefined;
    const now = Date.now();
    while (this.pool.length > 0 && now - this.pool[0]!.since >= MIN_AGE_MS) {
      const spare = this.pool.shift()!;
      let fd: number;
      try {
        fd = openSync(spare.file, O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
      } catch {
        unlinkQuietly(spare.file);
        continue;
      }
      try {
        const stat = fstatSync(fd);
        if (!reusable(stat, spare, fresh)) {
          closeSync(fd);
          unlinkQuietly(spare.file);
          continue;
        }
        writeAll(fd, data);
        // Only a shorter document needs the end cut off (growing needs nothing).
        if (stat.size > data.length) ftruncateSync(fd, data.length);
        await fdatasyncAsync(fd);
      } catch (error) {
        closeSync(fd);
        unlinkQuietly(spare.file);
        throw error;
      }
      closeSync(fd);
      return spare.file;
    }
    return undefined;
  }

  /**
   * Before `target` is replaced: a second name for its inode, to keep it once the rename is done
   * (`kept`); undefined when the pool is full or the link cannot be made (the inode is then freed).
   */
  hold(target: string): string | undefined {
    if (!this.fresh || this.pool.length >= MAX_SPARES) return undefined;
    const file = tempName(target);
    try {
      linkSync(target, file);
    } catch {
      return undefined;
    }
    return file;
  }

  /** After the rename: `held` (from `hold`) joins the pool if it has no other name; else it goes. */
  kept(held: string): void {
    const stat = lstatSync(held, { throwIfNoEntry: false });
    if (stat?.isFile() && stat.nlink === 1) this.pool.push({ file: held, ino: stat.ino, since: Date.now() });
    else if (stat) unlinkQuietly(held);
  }

  /** The rename failed: the held name is a second name of a live file and must go now. */
  drop(held: string): void {
    unlinkQuietly(held);
  }

  /** A temp file this process created was installed at `target`: learn what a fresh file looks like here. */
  installedFresh(target: string): void {
    if (this.fresh) return;
    const stat = lstatSync(target, { throwIfNoEntry: false });
    if (stat?.isFile()) this.fresh = { uid: stat.uid, mode: stat.mode };
  }

  /** Remove every spare (at exit). */
  clear(): void {
    for (const spare of this.pool.splice(0)) unlinkQuietly(spare.file);
  }

  /** For tests: the spares waiting. */
  get size(): number {
    return this.pool.length;
  }
}

function reusable(stat: Stats, spare: Spare, fresh: { uid: number; mode: number }): boolean {
  return stat.isFile() && stat.ino === spare.ino && stat.nlink === 1 && stat.uid === fresh.uid && stat.mode === fresh.mode;
}
