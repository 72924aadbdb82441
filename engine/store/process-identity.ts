/**
 * Who owns a lock, a claim or a key marker: host, pid, the process's start time (Linux) and a
 * random nonce. A pid alone is not enough: after a crash a new process can get the same pid (a
 * restarted container keeps pid 1), and it must not mistake the dead owner's files for its own.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface ProcessIdentity {
  host: string;
  pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat field 22); null where unknown. */
  start: number | null;
  nonce: string;
}

/** The start time of `pid`, or null when it cannot be read (no /proc, no such process). */
export function startTimeOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]);
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}

export const SELF: ProcessIdentity = { host: os.hostname(), pid: process.pid, start: startTimeOf(process.pid), nonce: randomBytes(6).toString('hex') };

/** Identities this process hands out (one per open store), alive as long as the process. */
const ours = new Set<string>([SELF.nonce]);
let handed = 0;

/** A new identity of this process: two stores opened in one process hold files apart. */
export function newIdentity(): ProcessIdentity {
  const identity = { ...SELF, nonce: `${SELF.nonce}-${++handed}` };
  ours.add(identity.nonce);
  return identity;
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Is the process that wrote `owner` still running? (Another host: assume so.) */
export function isAlive(owner: Partial<ProcessIdentity>): boolean {
  if (owner.host !== undefined && owner.host !== SELF.host) return true;
  if (typeof owner.pid !== 'number') return false;
  if (owner.pid === SELF.pid) return owner.nonce === undefined || ours.has(owner.nonce);
  if (!pidExists(owner.pid)) return false;
  if (typeof owner.start === 'number') {
    const start = startTimeOf(owner.pid);
    if (start !== null && start !== owner.start) return false; // the pid was reused
  }
  return true;
}
