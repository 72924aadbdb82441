/**
 * From a proposal to the row the pool ranks (the fields named in `pool.fields`), and the compact
 * form the derived index is kept in between commands. Pure.
 */
import type { Proposal } from '../lifecycle/effects.js';
import { getPath } from '../util/json-path.js';
import type { PoolConfig } from './config.js';
import type { PoolRow } from './ranking.js';

/** A counter as the pool reads it: absent (or anything but a non-negative number) is 0. */
export function counterOf(proposal: Proposal, path: string): number {
  const value = getPath(proposal, path);
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/**
 * The row of a proposal in use, or undefined when it is not in the pool: another status, or no
 * (readable) promotion stamp — an unpromoted proposal has no pool entry to rank.
 */
export function rowOf(id: string, proposal: Proposal, pool: Pick<PoolConfig, 'state' | 'fields'>): PoolRow | undefined {
  if (proposal['status'] !== pool.state) return undefined;
  const stamp = getPath(proposal, pool.fields.promoted);
  const promoted = typeof stamp === 'string' ? Date.parse(stamp) : Number.NaN;
  if (!Number.isFinite(promoted)) return undefined;
  return {
    id,
    promoted,
    hits: counterOf(proposal, pool.fields.hits),
    misses: counterOf(proposal, pool.fields.misses),
    stack: [...new Set(strings(getPath(proposal, pool.fields.stack)).map((name) => name.toLowerCase()))],
    files: strings(getPath(proposal, pool.fields.files)),
    tasks: strings(getPath(proposal, pool.fields.tasks)),
  };
}

/** Do two rows rank the same? (A stale index row is one that differs from the proposal now.) */
export function sameRow(a: PoolRow | undefined, b: PoolRow | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Rows as JSON-ready data: each string stored once, rows as arrays of numbers. */
export interface PackedRows {
  strings: string[];
  rows: [id: string, promoted: number, hits: number, misses: number, stack: number[], files: number[], tasks: number[]][];
}

export function packRows(rows: Iterable<PoolRow>): PackedRows {
  const strings: string[] = [];
  const index = new Map<string, number>();
  const ref = (text: string) => {
    let at = index.get(text);
    if (at === undefined) {
      at = strings.push(text) - 1;
      index.set(text, at);
    }
    return at;
  };
  const packed: PackedRows['rows'] = [];
  for (const row of rows) packed.push([row.id, row.promoted, row.hits, row.misses, row.stack.map(ref), row.files.map(ref), row.tasks.map(ref)]);
  return { strings, rows: packed };
}

/** The rows back from their packed form; undefined when it is not one (a damaged cache is rebuilt). */
export function unpackRows(value: unknown): PoolRow[] | undefined {
  const packed = value as Partial<PackedRows> | null;
  if (!packed || !Array.isArray(packed.strings) || !Array.isArray(packed.rows)) return undefined;
  const table = packed.strings;
  const text = (refs: unknown): string[] | undefined => {
    if (!Array.isArray(refs)) return undefined;
    const out: string[] = [];
    for (const ref of refs) {
      const item = typeof ref === 'number' ? table[ref] : undefined;
      if (typeof item !== 'string') return undefined;
      out.push(item);
    }
    return out;
  };
  const rows: PoolRow[] = [];
  for (const raw of packed.rows) {
    if (!Array.isArray(raw) || raw.length !== 7) return undefined;
    const [id, promoted, hits, misses] = raw;
    const stack = text(raw[4]);
    const files = text(raw[5]);
    const tasks = text(raw[6]);
    if (typeof id !== 'string' || typeof promoted !== 'number' || typeof hits !== 'number' || typeof misses !== 'number' || !stack || !files || !tasks) return undefined;
    rows.push({ id, promoted, hits, misses, stack, files, tasks });
  }
  return rows;
}
