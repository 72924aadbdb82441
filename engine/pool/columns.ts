/**
 * The pool's rows in columns: what the derived index keeps between commands (index-bytes.ts lays
 * them out for the cache). Loading 100,000 rows then makes a few typed arrays, not 400,000
 * objects, and ranking walks the columns without building a row per proposal — only the few
 * that make the top K become objects.
 * Ranking here is the same arithmetic as `rankTop` (ranking.ts), in the same order of operations,
 * so both give the same floating-point scores and the same order (a property test holds them to
 * it). Pure.
 */
import type { RankingConfig } from './config.js';
import { fileMatcher, hitRate, hitWeight, recency, scoreRow, TopK, type Filters, type PoolRow, type Scored } from './ranking.js';

/** Row ids are ULIDs: fixed width, so all of them fit in one string. */
export const ID_WIDTH = 26;

export interface Columns {
  /** How many rows. */
  count: number;
  /** The ids, sorted, concatenated (ID_WIDTH characters each). */
  ids: string;
  promoted: Float64Array;
  hits: Float64Array;
  misses: Float64Array;
  /** Every distinct string of the lists, once; the lists hold indexes into it. */
  strings: string[];
  /** Each list, flattened, and how many items each row has in it. */
  stack: Uint32Array;
  stackCount: Uint32Array;
  files: Uint32Array;
  filesCount: Uint32Array;
  tasks: Uint32Array;
  tasksCount: Uint32Array;
}

export const EMPTY_COLUMNS: Columns = {
  count: 0,
  ids: '',
  promoted: new Float64Array(0),
  hits: new Float64Array(0),
  misses: new Float64Array(0),
  strings: [],
  stack: new Uint32Array(0),
  stackCount: new Uint32Array(0),
  files: new Uint32Array(0),
  filesCount: new Uint32Array(0),
  tasks: new Uint32Array(0),
  tasksCount: new Uint32Array(0),
};

/** Rows into columns, sorted by id. Every id must be ULID-wide (the store's ids are). */
export function toColumns(rows: Iterable<PoolRow>): Columns {
  const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const count = sorted.length;
  const strings: string[] = [];
  const refs = new Map<string, number>();
  const ref = (text: string) => {
    let at = refs.get(text);
    if (at === undefined) {
      at = strings.push(text) - 1;
      refs.set(text, at);
    }
    return at;
  };
  const promoted = new Float64Array(count);
  const hits = new Float64Array(count);
  const misses = new Float64Array(count);
  const stackCount = new Uint32Array(count);
  const filesCount = new Uint32Array(count);
  const tasksCount = new Uint32Array(count);
  const ids: string[] = [];
  const stack: number[] = [];
  const files: number[] = [];
  const tasks: number[] = [];
  sorted.forEach((row, i) => {
    if (row.id.length !== ID_WIDTH) throw new Error(`pool index: id ${JSON.stringify(row.id)} is not ${ID_WIDTH} characters`);
    ids.push(row.id);
    promoted[i] = row.promoted;
    hits[i] = row.hits;
    misses[i] = row.misses;
    for (const name of row.stack) stack.push(ref(name));
    stackCount[i] = row.stack.length;
    for (const pattern of row.files) files.push(ref(pattern));
    filesCount[i] = row.files.length;
    for (const kind of row.tasks) tasks.push(ref(kind));
    tasksCount[i] = row.tasks.length;
  });
  return {
    count,
    ids: ids.join(''),
    promoted,
    hits,
    misses,
    strings,
    stack: Uint32Array.from(stack),
    stackCount,
    files: Uint32Array.from(files),
    filesCount,
    tasks: Uint32Array.from(tasks),
    tasksCount,
  };
}

/**
 * Are these columns ones `toColumns` could have made? Every number is one a row holds — a finite
 * instant, finite counters from 0 — and every count and reference fits: a wrong counter would
 * only misrank a row that the re-read of what is printed corrects, while a wrong count or
 * reference would misplace every row. (Columns read back from the cache are checked with this.)
 */
export function wellFormed(c: Columns): boolean {
  const { count } = c;
  if (!Number.isInteger(count) || count < 0 || c.ids.length !== count * ID_WIDTH) return false;
  if (c.promoted.length !== count || c.hits.length !== count || c.misses.length !== count) return false;
  for (let i = 0; i < count; i++) {
    const hits = c.hits[i]!;
    const misses = c.misses[i]!;
    if (!Number.isFinite(c.promoted[i]!) || !(hits >= 0 && hits < Infinity) || !(misses >= 0 && misses < Infinity)) return false;
  }
  // A string is in the table once (toColumns keeps one entry per distinct string).
  if (new Set(c.strings).size !== c.strings.length) return false;
  const list = (values: Uint32Array, counts: Uint32Array) => {
    if (counts.length !== count) return false;
    let total = 0;
    for (let i = 0; i < count; i++) total += counts[i]!;
    if (total !== values.length) return false;
    for (let i = 0; i < values.length; i++) if (values[i]! >= c.strings.length) return false;
    return true;
  };
  if (!list(c.stack, c.stackCount) || !list(c.files, c.filesCount) || !list(c.tasks, c.tasksCount)) return false;
  // A row names a stack once (rowOf keeps distinct names): the match counts each entry.
  const lastRow = new Int32Array(c.strings.length).fill(-1);
  for (let i = 0, j = 0; i < count; i++) {
    for (const end = j + c.stackCount[i]!; j < end; j++) {
      if (lastRow[c.stack[j]!] === i) return false;
      lastRow[c.stack[j]!] = i;
    }
  }
  // (The ids' form and order are the reader's to check: see index-bytes.ts.)
  return true;
}

/** The id of row `i`. */
export function idAt(columns: Columns, i: number): string {
  return columns.ids.slice(i * ID_WIDTH, (i + 1) * ID_WIDTH);
}

/** Where each row's part of a list starts (prefix sums of the counts; the end is the next start). */
function starts(counts: Uint32Array): Uint32Array {
  const out = new Uint32Array(counts.length + 1);
  for (let i = 0; i < counts.length; i++) out[i + 1] = out[i]! + counts[i]!;
  return out;
}

const startsOf = new WeakMap<Columns, { stack: Uint32Array; files: Uint32Array; tasks: Uint32Array }>();

/** The start offsets of the three lists, computed once per columns. */
function offsets(columns: Columns): { stack: Uint32Array; files: Uint32Array; tasks: Uint32Array } {
  let known = startsOf.get(columns);
  if (!known) {
    known = { stack: starts(columns.stackCount), files: starts(columns.filesCount), tasks: starts(columns.tasksCount) };
    startsOf.set(columns, known);
  }
  return known;
}

/** The row at index `i`, as an object. */
export function rowAt(columns: Columns, i: number): PoolRow {
  const at = offsets(columns);
  const list = (values: Uint32Array, from: Uint32Array) => Array.from(values.subarray(from[i]!, from[i + 1]!), (ref) => columns.strings[ref]!);
  return {
    id: idAt(columns, i),
    promoted: columns.promoted[i]!,
    hits: columns.hits[i]!,
    misses: columns.misses[i]!,
    stack: list(columns.stack, at.stack),
    files: list(columns.files, at.files),
    tasks: list(columns.tasks, at.tasks),
  };
}

/** The index of `id` (binary search over the sorted ids), or -1. */
export function findRow(columns: Columns, id: string): number {
  let lo = 0;
  let hi = columns.count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = idAt(columns, mid);
    if (at === id) return mid;
    if (at < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** 1 or 0 per string of the table: does it pass `test`? */
function flagAll(strings: readonly string[], test: (text: string) => boolean): Uint8Array {
  const out = new Uint8Array(strings.length);
  for (let i = 0; i < strings.length; i++) out[i] = test(strings[i]!) ? 1 : 0;
  return out;
}

/**
 * `rankTop` over the columns, with `overlay` replacing rows (a row that changed since the columns
 * were written; undefined: no longer in the pool). Same result as `rankTop` over the merged rows.
 */
export function rankColumns(
  columns: Columns,
  overlay: ReadonlyMap<string, PoolRow | undefined>,
  filters: Filters,
  now: number,
  ranking: RankingConfig,
  k: number,
): Scored[] {
  const top = new TopK(k);
  const files = filters.file === undefined ? undefined : fileMatcher(filters.file);
  const names = filters.stack;
  const at = offsets(columns);
  // Per distinct string, once: is it a named stack, a matching glob, the task kind? (Globs only
  // for strings used as file patterns, each matched once.)
  const inStack = names ? flagAll(columns.strings, (name) => names.includes(name)) : undefined;
  const taskHit = filters.task === undefined ? undefined : flagAll(columns.strings, (kind) => kind === filters.task);
  let fileHit: Int8Array | undefined;
  if (files) {
    fileHit = new Int8Array(columns.strings.length).fill(-1);
    for (const ref of columns.files) if (fileHit[ref] === -1) fileHit[ref] = files([columns.strings[ref]!]) ? 1 : 0;
  }
  for (let i = 0; i < columns.count; i++) {
    // The same sums, in the same order, as matchOf.
    let sum = 0;
    let count = 0;
    if (inStack && names) {
      let found = 0;
      for (let j = at.stack[i]!; j < at.stack[i + 1]!; j++) found += inStack[columns.stack[j]!]!;
      sum += found / names.length;
      count++;
    }
    if (fileHit) {
      let hit = 0;
      for (let j = at.files[i]!; j < at.files[i + 1]! && hit === 0; j++) hit = fileHit[columns.files[j]!]!;
      sum += hit;
      count++;
    }
    if (taskHit) {
      let hit = 0;
      for (let j = at.tasks[i]!; j < at.tasks[i + 1]! && hit === 0; j++) hit = taskHit[columns.tasks[j]!]!;
      sum += hit;
      count++;
    }
    const match = count === 0 ? 1 : sum / count;
    if (match === 0) continue;
    const rate = hitRate(columns.hits[i]!, columns.misses[i]!, ranking.minOutcomes);
    const weight = hitWeight(rate, ranking.hitWeight);
    // recency ≤ 1 and rounded products are monotone, so match × weight bounds the score: a row
    // that cannot reach the last one kept needs no recency at all.
    const last = top.last();
    if (last && match * weight < last.score) continue;
    const fresh = recency(columns.promoted[i]!, now, ranking.halfLifeDays);
    const score = match * fresh * weight;
    // Most rows fall below the last one kept: one comparison, no allocation.
    if (last && (score < last.score || (score === last.score && idAt(columns, i) < last.row.id))) continue;
    const id = idAt(columns, i);
    if (overlay.has(id)) continue;
    top.offer({ row: rowAt(columns, i), score, match, recency: fresh, hitWeight: weight, hitRate: rate });
  }
  for (const row of overlay.values()) {
    const scored = row ? scoreRow(row, filters, now, ranking, files) : undefined;
    if (scored) top.offer(scored);
  }
  return top.best();
}
