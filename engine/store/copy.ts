/**
 * `pipeline store copy`: a whole store from one backend to another (file ↔ PostgreSQL, or the
 * same kind elsewhere) — proposals, the audit log, the ledgers, pool entries and documents, not
 * the answer cache. The destination must be empty. What was read is counted, what landed is
 * counted again from the destination, and the two must agree.
 *
 * A copy lands whole or not at all: PostgreSQL loads in one transaction, and a directory is filled
 * beside its place and renamed into it once checked — a copy that fails, or is killed, leaves the
 * destination as it was, so the same command can simply be run again.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { type Issue, PipelineError } from '../errors.js';
import { fsyncDir } from '../util/atomic-write.js';
import type { Dumped, Store } from './types.js';

export interface CopyCounts {
  proposals: number;
  audit: number;
  ledgers: Record<string, number>;
  entries: Record<string, number>;
  documents: Record<string, number>;
}

function emptyCounts(): CopyCounts {
  return { proposals: 0, audit: 0, ledgers: {}, entries: {}, documents: {} };
}

function tally(counts: CopyCounts, item: Dumped): void {
  const bump = (map: Record<string, number>, name: string) => (map[name] = (map[name] ?? 0) + 1);
  if (item.kind === 'proposal') counts.proposals++;
  else if (item.kind === 'audit') counts.audit++;
  else if (item.kind === 'ledger') bump(counts.ledgers, item.ledger);
  else if (item.kind === 'entry') bump(counts.entries, item.collection);
  else bump(counts.documents, item.collection);
}

/** Count what a store holds (the same items a dump yields). */
export async function countStore(store: Store): Promise<CopyCounts> {
  const counts = emptyCounts();
  for await (const item of store.dump()) tally(counts, item);
  return counts;
}

export interface CopyResult {
  copied: CopyCounts;
  found: CopyCounts;
  same: boolean;
}

/**
 * Copy `from` into the empty `to`; returns what was copied, checked against what `to` now holds.
 * A source holding two proposals for one key (a hand-made copy of a file) cannot be loaded: every
 * such key is reported with its proposals' ids, and the load fails, so nothing lands.
 */
export async function copyStore(from: Store, to: Store): Promise<CopyResult> {
  const copied = emptyCounts();
  const owners = new Map<string, string[]>();
  async function* counted(): AsyncIterable<Dumped> {
    for await (const item of from.dump()) {
      if (item.kind === 'proposal' && item.key !== null) {
        const ids = owners.get(item.key);
        if (ids) {
          ids.push(item.id);
          continue;
        }
        owners.set(item.key, [item.id]);
      }
      tally(copied, item);
      yield item;
    }
    const shared = [...owners].filter(([, ids]) => ids.length > 1);
    if (shared.length > 0) throw duplicateKeys(from, shared);
  }
  await to.load(counted());
  const found = await countStore(to);
  return { copied, found, same: JSON.stringify(normalize(copied)) === JSON.stringify(normalize(found)) };
}

function duplicateKeys(from: Store, shared: readonly [string, string[]][]): PipelineError {
  const issues: Issue[] = shared.map(([key, ids]) => ({
    code: 'store.duplicate_key',
    severity: 'error',
    message: `key ${JSON.stringify(key)} is held by ${ids.length} proposals: ${ids.join(', ')}`,
  }));
  return new PipelineError(
    'store.duplicate_key',
    `${from.location} holds more than one proposal for ${shared.length === 1 ? 'a key' : `${shared.length} keys`}; a store holds one per key, so nothing was copied`,
    { issues, hint: 'move the extra proposal files out of the source store (or correct their key), then copy again' },
  );
}

/** Refused before anything is written: a copy only fills an empty store. */
export function notEmpty(location: string): PipelineError {
  return new PipelineError('store.not_empty', `${location} is not empty; store copy only fills an empty store (nothing was written)`, {
    hint: 'copy into a new directory or a new schema (…?schema=NAME)',
  });
}

/**
 * Copy `from` into the directory `target` (missing or empty): filled at a hidden name beside it
 * through `open`, checked, then renamed into place. On any failure — or counts that do not agree,
 * returned with `same: false` — the filled directory is removed and `target` is left as it was.
 */
export async function copyToDirectory(from: Store, target: string, open: (dir: string) => Store): Promise<CopyResult> {
  const isEmpty = () => !existsSync(target) || readdirSync(target).length === 0;
  if (!isEmpty()) throw notEmpty(target);
  const parent = path.dirname(target);
  mkdirSync(parent, { recursive: true });
  const staging = path.join(parent, `.${path.basename(target)}.copy-${process.pid}-${randomBytes(4).toString('hex')}`);
  const staged = open(staging);
  let placed = false;
  try {
    const result = await copyStore(from, staged);
    if (!result.same) return result;
    try {
      // rename(2) replaces an empty directory, and refuses one that has been written meanwhile.
      renameSync(staging, target);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') throw notEmpty(target);
      throw error;
    }
    placed = true;
    await fsyncDir(parent);
    return result;
  } finally {
    await staged.close().catch(() => undefined);
    if (!placed) rmSync(staging, { recursive: true, force: true });
  }
}

function normalize(counts: CopyCounts): CopyCounts {
  const sorted = (map: Record<string, number>) => Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : 1)));
  return {
    proposals: counts.proposals,
    audit: counts.audit,
    ledgers: sorted(counts.ledgers),
    entries: sorted(counts.entries),
    documents: sorted(counts.documents),
  };
}

/** `1,234 proposals, 5,678 audit rows, declined 12, …` */
export function describeCounts(counts: CopyCounts): string[] {
  const lines = [`${counts.proposals} proposals`, `${counts.audit} audit rows`];
  for (const [name, n] of Object.entries(counts.ledgers)) lines.push(`${n} ${name} ledger rows`);
  for (const [name, n] of Object.entries(counts.entries)) lines.push(`${n} ${name} entries`);
  for (const [name, n] of Object.entries(counts.documents)) lines.push(`${n} ${name} documents`);
  return lines;
}
