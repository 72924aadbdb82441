/**
 * Exclusive files that name their owner: per-proposal commit locks and per-stage claims.
 *
 * Each process writes its identity once per store, aside and renamed into place
 * (`.owners/<host>.<pid>.<nonce>`), and takes a lock or a claim by hard-linking that file to the
 * lock's name. `link()` is atomic and exclusive, so a lock is never observable empty or
 * half-written — whatever kills the process, and whenever — and taking one creates no inode.
 *
 * A lock whose owner is dead is stale and is taken over at once (a SIGKILLed run frees its work
 * immediately). An owner on another host cannot be asked whether it is alive: it holds its files
 * by lease — the shared owner inode's mtime, refreshed while the process holds anything; past
 * the lease time its files are stale.
 *
 * Hand-written: lock libraries such as proper-lockfile detect staleness by age only, which keeps
 * a killed run's proposals locked for the stale period; checking the owner's pid frees them at
 * once.
 */
import { closeSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { Busy } from '../errors.js';
import { unlinkQuietly, writeAll } from '../util/atomic-write.js';
import { isRealDirectory, readRegular } from './files.js';
import { isAlive, newIdentity, SELF, type ProcessIdentity } from './process-identity.js';

/** Default lease of an owner on another host (SPEC §11 `claim_ttl`, 5 min). */
export const DEFAULT_LEASE_MS = 5 * 60_000;
/** A takeover marker older than this belongs to a taker that is stuck (a dead one is seen at once). */
const STEAL_STALE_MS = 30_000;

export interface Held {
  release(): Promise<void>;
}

export type Attempt = { held: Held } | { holder: 'live' } | { holder: 'stale'; owner: Partial<ProcessIdentity> | null };

/** The owner-file name of an identity: `<host>.<pid>.<nonce>`. */
export function ownerFileName(identity: Partial<ProcessIdentity>): string {
  return `${String(identity.host ?? '').replace(/[^A-Za-z0-9_.-]/g, '_')}.${identity.pid}.${identity.nonce}`;
}

/**
 * The identity in an owner file: undefined when the file is gone, null when it is not an identity
 * (a FIFO, link or directory planted there is read without blocking or following, and is none).
 */
function readOwner(file: string): Partial<ProcessIdentity> | null | undefined {
  let text: string | undefined;
  try {
    text = readRegular(file);
  } catch {
    return null;
  }
  if (text === undefined) return undefined;
  try {
    const parsed = JSON.parse(text) as Partial<ProcessIdentity>;
    return parsed && typeof parsed.pid === 'number' ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * Remove `file` only while it is still the inode `own` names: a file put in its place since, or one
 * found where a directory of the store was swapped for a link to another, is never removed.
 */
function removeIfOwn(file: string, own: { dev: number; ino: number }): void {
  if (isInode(file, own)) unlinkQuietly(file);
}

/** Is `file` (not followed if a link) the regular file `own` names? */
function isInode(file: string, own: { dev: number; ino: number }): boolean {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  return stat?.isFile() === true && stat.ino === own.ino && stat.dev === own.dev;
}

const ownFiles = new Map<string, { dev: number; ino: number }>();
/** One exit hook for every store this process opened: a clean exit leaves no owner file behind. */
function removeAtExit(file: string, own: { dev: number; ino: number }): void {
  if (ownFiles.size === 0) process.once('exit', () => ownFiles.forEach((identity, name) => removeIfOwn(name, identity)));
  ownFiles.set(file, own);
}

/** The process's owner files, one per store directory (hard links cannot cross file systems). */
export class OwnerFiles {
  private file: string | undefined;
  private ino = -1;
  private dev = -1;
  /** This handle's identity: the process's, with a nonce of its own. */
  readonly identity: ProcessIdentity = newIdentity();
  private holding = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** The store's `.owners` directory. */
    private readonly dir: string,
    /** How long an owner on another host holds its files without renewing them. */
    readonly leaseMs = DEFAULT_LEASE_MS,
  ) {}

  /** This process's owner file, created on first use. */
  private self(): string {
    if (this.file) return this.file;
    mkdirSync(this.dir, { recursive: true });
    const file = path.join(this.dir, ownerFileName(this.identity));
    const temp = `${file}.tmp`;
    const fd = openSync(temp, 'w', 0o644);
    try {
      writeAll(fd, Buffer.from(JSON.stringify(this.identity)));
      // After a power loss a lock must not point at an empty inode (it would look stale, which
      // is right then, but an owner file is written once per process, so make it whole).
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
    this.file = file;
    const stat = statSync(file);
    this.ino = stat.ino;
    this.dev = stat.dev;
    removeAtExit(file, { dev: stat.dev, ino: stat.ino });
    return file;
  }

  /** Is `file` held by a live owner (on this host), or by an unexpired lease (another host)? */
  private live(file: string, owner: Partial<ProcessIdentity>): boolean {
    if (owner.host !== undefined && owner.host !== SELF.host) {
      const stat = statSync(file, { throwIfNoEntry: false });
      return stat !== undefined && Date.now() - stat.mtimeMs < this.leaseMs;
    }
    return isAlive(owner);
  }

  /** Who holds `file`: nobody, this process, a live owner (or unexpired lease), or a stale one. */
  holder(file: string): 'none' | 'mine' | 'live' | 'stale' {
    if (this.holds(file)) return 'mine';
    const owner = readOwner(file);
    if (owner === undefined) return 'none';
    return owner && this.live(file, owner) ? 'live' : 'stale';
  }

  /** Does this process hold `file` right now? (A fencing check before a commit.) */
  holds(file: string): boolean {
    return this.file !== undefined && statSync(file, { throwIfNoEntry: false })?.ino === this.ino;
  }

  /** Try once to take `file`. Returns null when a live owner (or an unexpired lease) holds it. */
  tryAcquire(file: string): Held | null {
    const attempt = this.attempt(file);
    return 'held' in attempt ? attempt.held : null;
  }

  /**
   * Try once to take `file`, telling a live holder from a stale one. A stale file is taken over
   * only when `mayTakeOver(owner)` agrees (the store first finishes what a dead owner left).
   */
  attempt(file: string, mayTakeOver: (owner: Partial<ProcessIdentity> | null) => boolean = () => true): Attempt {
    const me = this.self();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(me, file);
        return { held: this.held(file) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = readOwner(file);
      if (owner === undefined) continue; // released meanwhile: try again
      // A file that is not an identity was never written by a live holder (owners are linked
      // whole): it is left over from a power loss or an older version, and stale.
      if (owner && this.live(file, owner)) return { holder: 'live' };
      if (!mayTakeOver(owner)) return { holder: 'stale', owner };
      const taken = this.takeOver(file, owner);
      if (taken === false) return { holder: 'live' };
    }
    return { holder: 'live' };
  }

  /** The name of this process's owner file (its journal has the same name). */
  get name(): string {
    return path.basename(this.self());
  }

  /** Is the owner of the owner file called `name` alive (or, on another host, within its lease)? */
  alive(name: string): boolean {
    if (this.file && name === path.basename(this.file)) return true;
    const file = path.join(this.dir, name);
    const owner = readOwner(file);
    return Boolean(owner && this.live(file, owner));
  }

  private held(file: string): Held {
    this.holding++;
    this.renewWhileHolding();
    let released = false;
    return {
      // Nobody takes over the file of a live owner, so it is still ours to remove — while it is
      // our link (a review swapped the claims' directory for a link mid-run, with files named
      // like the claims in the other one: a release removed them).
      release: async () => {
        if (released) return;
        released = true;
        removeIfOwn(file, { dev: this.dev, ino: this.ino });
        if (--this.holding === 0 && this.timer) {
          clearInterval(this.timer);
          this.timer = undefined;
        }
      },
    };
  }

  /** Keep the lease of everything this process holds: one touch of the shared owner inode. */
  private renewWhileHolding(): void {
    if (this.timer || !this.file) return;
    const file = this.file;
    this.timer = setInterval(
      () => {
        try {
          const now = new Date();
          if (this.isOwn(file)) utimesSync(file, now, now);
        } catch {
          // the store went away; nothing left to hold
        }
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    this.timer.unref();
  }

  /** Is `file` still this process's owner inode (not one found through a directory swapped for a link)? */
  private isOwn(file: string): boolean {
    return isInode(file, { dev: this.dev, ino: this.ino });
  }

  /** Renew now (a caller about to start a long call may want a fresh lease). */
  renew(): void {
    if (!this.file || !this.isOwn(this.file)) return;
    const now = new Date();
    try {
      utimesSync(this.file, now, now);
    } catch {
      // nothing to renew
    }
  }

  /**
   * Remove a stale file, guarded by a takeover marker (also a link to our owner file) so two
   * takers never both remove it. Returns false when another live taker is at it.
   */
  private takeOver(file: string, stale: Partial<ProcessIdentity> | null): boolean | 'retry' {
    const marker = `${file}.takeover`;
    try {
      linkSync(this.self(), marker);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const taker = readOwner(marker);
      const stat = statSync(marker, { throwIfNoEntry: false });
      if (stat && (!taker || !this.live(marker, taker) || Date.now() - stat.mtimeMs > STEAL_STALE_MS)) {
        unlinkQuietly(marker);
        return 'retry';
      }
      return false;
    }
    try {
      const again = readOwner(file);
      // Still the owner we found dead? (A live process that took it meanwhile has another identity.)
      const same = again !== undefined && JSON.stringify(again) === JSON.stringify(stale);
      // Synchronously, straight after the check: nothing of this process can run in between.
      if (same) unlinkQuietly(file);
      return same || again === undefined ? 'retry' : false;
    } finally {
      unlinkQuietly(marker);
    }
  }

  /**
   * Remove the owner files of dead processes of this host (the locks that still link to one
   * keep its identity, and are stale all the same). Returns how many were removed.
   */
  sweep(): number {
    let removed = 0;
    let names: string[];
    // Only in the store's own directory: never through a link swapped in for it.
    if (!isRealDirectory(this.dir)) return 0;
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    for (const name of names) {
      if (!isRealDirectory(this.dir)) break;
      const file = path.join(this.dir, name);
      if (file === this.file) continue;
      const owner = readOwner(file);
      if (owner === undefined || (owner && (owner.host !== SELF.host || isAlive(owner)))) continue;
      if (owner === null && Date.now() - (statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) < 10_000) continue; // being written
      unlinkQuietly(file);
      removed++;
    }
    return removed;
  }

  /** Wait for `file` (short critical sections), up to `timeoutMs`. */
  async acquire(file: string, timeoutMs = 15000): Promise<Held> {
    const start = Date.now();
    let delay = 1;
    for (;;) {
      const held = this.tryAcquire(file);
      if (held) return held;
      if (Date.now() - start > timeoutMs) {
        throw new Busy(`${path.basename(file)} is busy (held by another process for over ${Math.round(timeoutMs / 1000)} s)`);
      }
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 50);
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
