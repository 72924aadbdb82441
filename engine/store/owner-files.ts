/**
 * Exclusive files that name their owner process: per-proposal commit locks and per-stage claims.
 * A file whose owner is dead (SIGKILL, power loss) is stale and may be taken over, so a killed
 * run never leaves a proposal stuck.
 *
 * Hand-written: lock libraries such as proper-lockfile detect staleness by age (mtime), which
 * keeps a killed run's proposals locked for the stale period; checking the owner's pid frees
 * them at once.
 */
import { closeSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { writeAll } from './files.js';
import { isAlive, SELF, type ProcessIdentity } from './process-identity.js';

interface Owner extends ProcessIdentity {
  token: string;
}

let tokens = 0;
/** A takeover marker older than this belongs to a taker that is stuck (a dead one is seen at once). */
const STEAL_STALE_MS = 30_000;
/** An owner file still empty after this long was left by a holder killed mid-write. */
const HALF_WRITTEN_MS = 1000;

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

async function readOwner(file: string): Promise<Owner | null | undefined> {
  try {
    const text = readFileSync(file, 'utf8');
    const parsed = JSON.parse(text) as Owner;
    return typeof parsed.pid === 'number' ? parsed : null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return null; // unreadable: treat as stale
  }
}

export interface Held {
  release(): Promise<void>;
}

/** Try once to take `file`. Returns null when a live owner holds it. */
export async function tryAcquire(file: string): Promise<Held | null> {
  const token = `${SELF.nonce}.${++tokens}`;
  const owner: Owner = { ...SELF, token };
  const content = Buffer.from(JSON.stringify(owner));
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number | undefined;
    try {
      // One exclusive create; the owner is written at once. A holder killed between the two
      // leaves an empty file, which counts as stale only once it is a second old (below).
      fd = openSync(file, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (fd !== undefined) {
      try {
        writeAll(fd, content);
      } finally {
        closeSync(fd);
      }
      return {
        // Nobody takes over the file of a live owner, so it is still ours to remove.
        release: async () => unlinkQuietly(file),
      };
    }
    const current = await readOwner(file);
    if (current === undefined) continue; // released meanwhile: try again
    if (current && isAlive(current)) return null;
    if (current === null && youngerThan(file, HALF_WRITTEN_MS)) return null; // being written right now
    if ((await takeOver(file, current)) === false) return null;
  }
  return null;
}

function youngerThan(file: string, ms: number): boolean {
  const stat = statSync(file, { throwIfNoEntry: false });
  return stat !== undefined && Date.now() - stat.mtimeMs < ms;
}

/** Remove a stale file, guarded by a takeover marker so two takers never both remove. */
async function takeOver(file: string, stale: Owner | null): Promise<boolean | 'retry'> {
  const marker = `${file}.takeover`;
  // Written aside and linked into place, so a marker is never seen empty (a taker killed mid-write).
  const temp = `${marker}.${process.pid}.${SELF.nonce}${++tokens}.tmp`;
  writeFileSync(temp, JSON.stringify(SELF));
  try {
    linkSync(temp, marker);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    let taker: Partial<ProcessIdentity> = {};
    try {
      taker = JSON.parse(readFileSync(marker, 'utf8')) as Partial<ProcessIdentity>;
    } catch {
      // gone or unreadable: judged by age below
    }
    const stat = statSync(marker, { throwIfNoEntry: false });
    if (stat && (!isAlive(taker) || Date.now() - stat.mtimeMs > STEAL_STALE_MS)) {
      unlinkQuietly(marker);
      return 'retry';
    }
    return false;
  } finally {
    unlinkQuietly(temp);
  }
  try {
    const again = await readOwner(file);
    const same = again === undefined || (again === null ? stale === null : stale !== null && again.token === stale.token);
    // Synchronously, straight after the check: nothing can run in between.
    if (same && again !== undefined) unlinkQuietly(file);
    return same;
  } finally {
    unlinkQuietly(marker);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Wait for `file` (short critical sections), up to `timeoutMs`. */
export async function acquire(file: string, timeoutMs = 15000): Promise<Held> {
  const start = Date.now();
  let delay = 1;
  for (;;) {
    const held = await tryAcquire(file);
    if (held) return held;
    if (Date.now() - start > timeoutMs) {
      throw Object.assign(new Error(`${path.basename(file)} is busy (held by another process for over ${Math.round(timeoutMs / 1000)} s)`), { code: 'EBUSY' });
    }
    await sleep(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 50);
  }
}
