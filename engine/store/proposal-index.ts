/**
 * A cache of each proposal file's status (and which of a few declared fields it has, e.g. the
 * promotion stamp), validated against the file's (mtime, size, inode) on every use, so `status`
 * and `list` cost one stat per proposal instead of one read and parse. Any change to a file — by
 * the engine (a rename: new inode) or by hand — is seen and the file read again. The cache is
 * never required for correctness: delete it and it is rebuilt.
 *
 * Kept lean for 100,000 files: the directory listing and the cache are both sorted by id and
 * merged, with no per-entry objects.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { hasPath } from '../util/json-path.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { readRegular } from './files.js';
import { statFiles } from './parallel-stat.js';
import { wrongId } from './types.js';

const FORMAT = 'pipeline-index 3';
const FILE_NAME = /^[0-7][0-9A-HJKMNP-TV-Z]{25}\.json$/;

export interface ProposalScan {
  /** Sorted. */
  ids: string[];
  /** Parallel to ids; null when the file is malformed. */
  statuses: (string | null)[];
  /** Parallel to ids; bit i set when the file has marked field i. */
  marks: number[];
}

/**
 * Parse a proposal file just enough for the index; `record` is the parsed object (absent when
 * the file is not a JSON object), so a caller that wants the whole proposal need not parse again.
 */
export function parseHead(
  text: string,
  markFields: readonly string[],
  id?: string,
): { status: string | null; marks: number; record?: Record<string, unknown> } {
  try {
    const value = JSON.parse(text) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return { status: null, marks: 0 };
    const record = value as Record<string, unknown>;
    if (id !== undefined && wrongId(id, record)) return { status: null, marks: 0 };
    let marks = 0;
    markFields.forEach((field, bit) => {
      if (hasPath(record, field)) marks |= 1 << bit;
    });
    return { status: typeof record['status'] === 'string' ? record['status'] : null, marks, record };
  } catch {
    return { status: null, marks: 0 };
  }
}

/** A proposal file the scan read in full: its text and the object parsed from it. */
export interface ReadDuringScan {
  text: string;
  record: Record<string, unknown>;
}

/**
 * What a scan may hand on of the files it had to read (new or changed since the cache): those
 * whose status `wanted` accepts, at most `budget` of them, put into `into` by id. A listing that
 * follows the scan then prints them without reading and parsing each file a second time — the
 * first listing of a store the index has not seen costs one read per file, not two. The budget
 * keeps memory bounded whatever the caller does with the rest.
 */
export interface KeepReads {
  wanted: (status: string) => boolean;
  budget: number;
  into: Map<string, ReadDuringScan>;
}

function readCache(file: string, fields: string): string[] {
  let text: string | undefined;
  try {
    text = readRegular(file);
  } catch {
    return [];
  }
  if (text === undefined) return [];
  const lines = text.split('\n');
  // The header names the marked fields: another set means another cache.
  return lines[0] === `${FORMAT}\t${fields}` ? lines.slice(1) : [];
}

/**
 * Bring the cache up to date with the proposals directory and return it. Files that changed
 * since the last scan are read again; the cache file is rewritten only when something changed.
 */
export async function scanProposals(proposalsDir: string, cacheFile: string, markFields: readonly string[], keep?: KeepReads): Promise<ProposalScan> {
  let names: string[];
  try {
    names = readdirSync(proposalsDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ids: [], statuses: [], marks: [] };
    throw error;
  }
  const ids = names
    .filter((name) => FILE_NAME.test(name))
    .map((name) => name.slice(0, 26))
    .sort();
  const cached = readCache(cacheFile, markFields.join(','));
  const out: ProposalScan = { ids: [], statuses: [], marks: [] };
  const lines: string[] = [];
  let changed = false;
  let c = 0;
  const prefix = `${proposalsDir}/`;
  // lstat: a link, FIFO or directory named like a proposal is reported (malformed), never followed.
  const stats = statFiles(prefix, ids, '.json');
  try {
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (i === stats.from) await stats.ready();
      const stat = stats.at(i);
      if (stat === undefined) continue;
      if (stat === null) {
        out.ids.push(id);
        out.statuses.push(null);
        out.marks.push(0);
        continue;
      }
      const signature = `${stat.mtimeMs}\t${stat.size}\t${stat.ino}`;
      while (c < cached.length && cached[c]!.slice(0, 26) < id) {
        c++;
        changed = true; // a cached entry whose file is gone
      }
      let line: string;
      if (c < cached.length && cached[c]!.startsWith(id) && cached[c]!.endsWith(signature)) line = cached[c++]!;
      else {
        if (c < cached.length && cached[c]!.startsWith(id)) c++;
        let text: string | undefined;
        try {
          text = readRegular(`${prefix}${id}.json`);
        } catch {
          text = ''; // replaced by something that is not a file meanwhile: malformed
        }
        if (text === undefined) continue; // removed meanwhile
        const head = parseHead(text, markFields, id);
        if (keep && head.record && head.status !== null && keep.into.size < keep.budget && keep.wanted(head.status))
          keep.into.set(id, { text, record: head.record });
        // A status with a tab or a newline is not a state of any machine; keep the line intact.
        line = `${id}\t${(head.status ?? '').replace(/[\t\n\r]/g, ' ')}\t${head.marks}\t${signature}`;
        changed = true;
      }
      const first = line.indexOf('\t', 27);
      const second = line.indexOf('\t', first + 1);
      const status = line.slice(27, first);
      out.ids.push(id);
      out.statuses.push(status === '' ? null : status);
      out.marks.push(Number(line.slice(first + 1, second)));
      lines.push(line);
    }
  } finally {
    stats.close();
  }
  if (c < cached.length && cached.slice(c).some((line) => line !== '')) changed = true;
  if (changed) {
    try {
      mkdirSync(path.dirname(cacheFile), { recursive: true });
      await writeFileAtomic(cacheFile, `${FORMAT}\t${markFields.join(',')}\n${lines.join('\n')}\n`, { durable: false });
    } catch {
      // A cache that cannot be written (a read-only store) is only slower next time.
    }
  }
  return out;
}
