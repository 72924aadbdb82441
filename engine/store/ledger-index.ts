/**
 * Which values a field takes in an append-only JSONL ledger, kept in memory and brought up to
 * date by reading only what was appended since the last question (by any process): asking
 * again is cheap, and a row another run appended a moment ago is seen. A file that shrank or
 * was replaced is read again from the start.
 */
import { lstatSync } from 'node:fs';
import { readRegularFrom } from './files.js';

interface Seen {
  offset: number;
  ino: number;
  /** The file's size when last read to its end: unchanged, there is nothing new (a torn last line included). */
  size: number;
  /** Partway through a line longer than a chunk (no row of any pipeline): passed over to its end. */
  skipping: boolean;
  values: Set<string>;
}

/**
 * How much of a ledger is read at a time: a ledger of any size is read in pieces, never made one
 * string (past 512 MB, V8 cannot), and a line longer than this is no row — it is passed over.
 */
let CHUNK = 8 * 1024 * 1024;

/** For tests: a smaller chunk; no argument puts the real one back. */
export function setLedgerChunk(bytes = 8 * 1024 * 1024): void {
  CHUNK = bytes;
}

let bytesRead = 0;
/** For tests: how many bytes of ledgers every index in this process has read. */
export function ledgerBytesRead(): number {
  return bytesRead;
}

export class LedgerIndex {
  private readonly seen = new Map<string, Seen>();

  /** Does `file` hold a row whose `field` is `value`? */
  has(file: string, field: string, value: unknown): boolean {
    return this.values(file, field).has(JSON.stringify(value ?? null));
  }

  private values(file: string, field: string): Set<string> {
    const key = `${file}\u0000${field}`;
    const stat = lstatSync(file, { throwIfNoEntry: false });
    let seen = this.seen.get(key);
    if (!seen || !stat || stat.size < seen.offset || stat.ino !== seen.ino) {
      seen = { offset: 0, ino: stat?.ino ?? 0, size: -1, skipping: false, values: new Set() };
      this.seen.set(key, seen);
    }
    if (!stat || stat.size === seen.size) return seen.values;
    while (seen.offset < stat.size) {
      const chunk = readRegularFrom(file, seen.offset, CHUNK);
      bytesRead += chunk.length;
      if (chunk.length === 0) break;
      let start = 0;
      if (seen.skipping) {
        const newline = chunk.indexOf(0x0a);
        if (newline === -1) {
          seen.offset += chunk.length;
          continue;
        }
        start = newline + 1;
        seen.skipping = false;
      }
      const end = chunk.lastIndexOf(0x0a) + 1;
      if (end <= start) {
        // No whole line after `start`: a line longer than a chunk is passed over; a shorter one is
        // the file's torn (or still being written) last line, read once it ends.
        if (start > 0) {
          seen.offset += start; // the end of a passed-over line: read on from there
          continue;
        }
        if (chunk.length === CHUNK) {
          seen.skipping = true;
          seen.offset += chunk.length;
          continue;
        }
        break;
      }
      for (const line of chunk.subarray(start, end).toString('utf8').split('\n')) {
        if (!line) continue;
        try {
          const row = JSON.parse(line) as Record<string, unknown>;
          if (row && typeof row === 'object') seen.values.add(JSON.stringify(row[field] ?? null));
        } catch {
          // a torn line is not a row
        }
      }
      seen.offset += end;
    }
    seen.size = stat.size;
    return seen.values;
  }
}
