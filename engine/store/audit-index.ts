/**
 * The last audit row (event and target) of every proposal, kept as a cache beside the audit log
 * and brought up to date by reading only what was appended since, so asking "what was the last
 * transition of each proposal?" costs the new rows, not the whole log. The log is append-only;
 * a log that shrank or was replaced is read again from the start. Never required for
 * correctness: delete the cache and it is rebuilt.
 */
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.js';
import { cacheDirUsable, makeCacheDir, readRegular, readRegularFrom } from './files.js';

const FORMAT = 'pipeline-audit-index 2';

/** Per proposal: its last row's event and target, and the byte offset where that row starts in the log. */
export type LastAudits = Map<string, { event: string; to: string; at: number }>;

function loadCache(file: string): { ino: number; offset: number; last: LastAudits } {
  const last: LastAudits = new Map();
  let text: string | undefined;
  try {
    text = cacheDirUsable(path.dirname(file)) ? readRegular(file) : undefined;
  } catch {
    text = undefined;
  }
  if (text === undefined) return { ino: 0, offset: 0, last };
  const lines = text.split('\n');
  const header = /^pipeline-audit-index 2\t(\d+)\t(\d+)$/.exec(lines[0] ?? '');
  if (!header) return { ino: 0, offset: 0, last };
  for (let i = 1; i < lines.length; i++) {
    const [id, event, to, at] = lines[i]!.split('\t');
    if (id && event !== undefined && to !== undefined && at !== undefined && /^\d+$/.test(at)) last.set(id, { event, to, at: Number(at) });
  }
  return { ino: Number(header[1]), offset: Number(header[2]), last };
}

/** What a process keeps between calls: the index as of `offset`, and how much is not saved yet. */
export interface AuditMemo {
  cache?: { ino: number; offset: number; last: LastAudits };
  unsaved: number;
}

/** Rows read past the saved cache before it is written again (a single command reads a few). */
const SAVE_AFTER_ROWS = 2000;

/**
 * The last audit row of every proposal, reading only what was appended since the last call of
 * this process (or since the saved cache). `save` writes the cache back now; otherwise it is
 * written once enough new rows were read.
 */
export async function readAuditIndex(log: string, cacheFile: string, memo: AuditMemo, save = false): Promise<LastAudits> {
  const stat = lstatSync(log, { throwIfNoEntry: false });
  if (!stat || !stat.isFile()) return new Map();
  let cache = memo.cache ?? loadCache(cacheFile);
  let added = 0;
  if (stat.ino !== cache.ino || stat.size < cache.offset) cache = { ino: stat.ino, offset: 0, last: new Map() };
  if (stat.size > cache.offset) {
    const tail = readRegularFrom(log, cache.offset);
    const end = tail.lastIndexOf(0x0a) + 1;
    // Line by line in bytes, so each row's offset in the log is known (a multi-byte character
    // makes string positions differ from file positions).
    for (let start = 0; start < end; ) {
      const newline = tail.indexOf(0x0a, start);
      const line = tail.subarray(start, newline).toString('utf8');
      const at = cache.offset + start;
      start = newline + 1;
      if (!line) continue;
      try {
        const row = JSON.parse(line) as { id?: unknown; event?: unknown; to?: unknown };
        if (typeof row.id === 'string' && typeof row.event === 'string' && typeof row.to === 'string') {
          cache.last.set(row.id, { event: row.event, to: row.to, at });
          added++;
        }
      } catch {
        // a torn line is not a row
      }
    }
    cache.offset += end;
  }
  memo.cache = cache;
  memo.unsaved += added;
  if (memo.unsaved > 0 && (save || memo.unsaved >= SAVE_AFTER_ROWS)) {
    memo.unsaved = 0;
    const lines = [`${FORMAT}\t${cache.ino}\t${cache.offset}`];
    for (const [id, { event, to, at }] of cache.last) lines.push(`${id}\t${event.replace(/[\t\n]/g, ' ')}\t${to.replace(/[\t\n]/g, ' ')}\t${at}`);
    try {
      makeCacheDir(path.dirname(cacheFile));
      await writeFileAtomic(cacheFile, `${lines.join('\n')}\n`, { durable: false });
    } catch {
      // an unwritable cache (a read-only store) only makes the next call slower
    }
  }
  return cache.last;
}
