/**
 * A cache of each proposal file's status and key, validated against the file's (mtime, size,
 * inode) on every use, so `status` and `list` need one stat per proposal instead of one read and
 * parse. Any change to a file — by the engine (a rename: new inode) or by hand — is seen and the
 * file re-read. The cache is never required for correctness: delete it and it is rebuilt.
 */
import { promises as fs, statSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ULID_PATTERN } from '../util/ids.js';
import { readTextIfExists, writeFileAtomic } from './files.js';

export interface IndexEntry {
  /** null: the file is malformed. */
  status: string | null;
  key: string | null;
  mtimeMs: number;
  size: number;
  ino: number;
}

const FORMAT = 'pipeline-index 1';
const FILE_NAME = /^([0-7][0-9A-HJKMNP-TV-Z]{25})\.json$/;

export interface ParsedHead {
  status: string | null;
  key: string | null;
}

/** Parse a proposal file just enough for the index. */
export function parseHead(text: string, keyField: string): ParsedHead {
  try {
    const value = JSON.parse(text) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return { status: null, key: null };
    const record = value as Record<string, unknown>;
    return {
      status: typeof record['status'] === 'string' ? record['status'] : null,
      key: typeof record[keyField] === 'string' ? (record[keyField] as string) : null,
    };
  } catch {
    return { status: null, key: null };
  }
}

function decode(text: string): Map<string, IndexEntry> {
  const entries = new Map<string, IndexEntry>();
  const lines = text.split('\n');
  if (lines[0] !== FORMAT) return entries;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const parts = line.split('\t');
    if (parts.length !== 6) continue;
    const [id, status, key, mtime, size, ino] = parts as [string, string, string, string, string, string];
    entries.set(id, {
      status: status === '' ? null : status,
      key: key === '' ? null : (JSON.parse(key) as string),
      mtimeMs: Number(mtime),
      size: Number(size),
      ino: Number(ino),
    });
  }
  return entries;
}

function encode(entries: Map<string, IndexEntry>): string {
  const lines = [FORMAT];
  for (const [id, entry] of entries) {
    lines.push(`${id}\t${entry.status ?? ''}\t${entry.key === null ? '' : JSON.stringify(entry.key)}\t${entry.mtimeMs}\t${entry.size}\t${entry.ino}`);
  }
  return `${lines.join('\n')}\n`;
}

export interface IndexScan {
  entries: Map<string, IndexEntry>;
}

/**
 * Bring the cache up to date with the proposals directory and return it. Files that changed
 * since the last scan are read again; the cache file is rewritten only when something changed.
 */
export async function scanProposals(proposalsDir: string, cacheFile: string, keyField: string): Promise<IndexScan> {
  let names: string[];
  try {
    names = readdirSync(proposalsDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: new Map() };
    throw error;
  }
  const cached = decode((await readTextIfExists(cacheFile)) ?? '');
  const entries = new Map<string, IndexEntry>();
  let changed = false;
  const stale: { id: string; file: string; stat: { mtimeMs: number; size: number; ino: number } }[] = [];
  for (const name of names) {
    const match = FILE_NAME.exec(name);
    if (!match) continue;
    const id = match[1]!;
    const file = path.join(proposalsDir, name);
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat || !stat.isFile()) continue;
    const previous = cached.get(id);
    if (previous && previous.mtimeMs === stat.mtimeMs && previous.size === stat.size && previous.ino === stat.ino) {
      entries.set(id, previous);
    } else {
      stale.push({ id, file, stat });
    }
  }
  for (const { id, file, stat } of stale) {
    const text = await readTextIfExists(file);
    if (text === undefined) continue;
    const head = parseHead(text, keyField);
    entries.set(id, { ...head, mtimeMs: stat.mtimeMs, size: stat.size, ino: stat.ino });
    changed = true;
  }
  if (!changed && cached.size !== entries.size) changed = true;
  if (changed) {
    await fs.mkdir(path.dirname(cacheFile), { recursive: true });
    await writeFileAtomic(cacheFile, encode(entries), { durable: false }).catch(() => {
      // A cache that cannot be written is only slower next time.
    });
  }
  return { entries };
}

export function isProposalFileName(name: string): boolean {
  return FILE_NAME.test(name) && ULID_PATTERN.test(name.slice(0, 26));
}
