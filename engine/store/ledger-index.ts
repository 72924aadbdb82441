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
  values: Set<string>;
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
      seen = { offset: 0, ino: stat?.ino ?? 0, values: new Set() };
      this.seen.set(key, seen);
    }
    if (!stat || stat.size === seen.offset) return seen.values;
    const tail = readRegularFrom(file, seen.offset);
    const end = tail.lastIndexOf(0x0a) + 1;
    for (const line of tail.subarray(0, end).toString('utf8').split('\n')) {
      if (!line) continue;
      try {
        const row = JSON.parse(line) as Record<string, unknown>;
        if (row && typeof row === 'object') seen.values.add(JSON.stringify(row[field] ?? null));
      } catch {
        // a torn line is not a row
      }
    }
    seen.offset += end;
    return seen.values;
  }
}
