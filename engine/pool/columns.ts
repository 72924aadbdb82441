/**
 * The pool's rows in columns: what the derived index keeps between commands. Loading 100,000
 * rows from JSON then allocates a few arrays instead of 400,000 objects, and ranking walks the
 * columns without building a row per proposal — only the few that make the top K become objects.
 * Ranking here is the same arithmetic as `rankTop` (ranking.ts), in the same order of operations,
 * so both give the same floating-point scores and the same order (a property test holds them to
 * it). Pure.
 */
import type { RankingConfig } from './config.js';
import { fileMatcher, hitRate, hitWeight, recency, scoreRow, TopK, type Filters, type PoolRow, type Scored } from './ranking.js';

/** Row ids are ULIDs: fixed width, so all of them fit in one string. */
const ID_WIDTH = 26;

export interface Columns {
  /** How many rows. */
  count: number;
  /** The ids, sorted, concatenated (ID_WIDTH characters each). */
  ids: string;
  promoted: number[];
  hits: number[];
  misses: number[];
  /** Every distinct string of the lists, once; the lists hold indexes into it. */
  strings: string[];
  /** Each list, flattened, and how many items each row has in it (small numbers keep the JSON small). */
  stack: number[];
  stackCount: number[];
  files: number[];
  filesCount: number[];
  tasks: number[];
  tasksCount: number[];
}

export const EMPTY_COLUMNS: Columns = {
  count: 0,
  ids: '',
  promoted: [],
  hits: [],
  misses: [],
  strings: [],
  stack: [],
  stackCount: [],
  files: [],
  filesCount: [],
  tasks: [],
  tasksCount: [],
};

/** Rows into columns, sorted by id. Every id must be ULID-wide (the store's ids are). */
export function toColumns(rows: Iterable<PoolRow>): Columns {
  const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const columns: Columns = { ...structuredClone(EMPTY_COLUMNS), count: sorted.length };
  const refs = new Map<string, number>();
  const ref = (text: string) => {
    let at = refs.get(text);
    if (at === undefined) {
      at = columns.strings.push(text) - 1;
      refs.set(text, at);
    }
    return at;
  };
  const ids: string[] = [];
  for (const row of sorted) {
    if (row.id.length !== ID_WIDTH) throw new Error(`pool index: id ${JSON.stringify(row.id)} is not ${ID_WIDTH} characters`);
    ids.push(row.id);
    columns.promoted.push(row.promoted);
    columns.hits.push(row.hits);
    columns.misses.push(row.misses);
    for (const name of row.stack) columns.stack.push(ref(name));
    columns.stackCount.push(row.stack.length);
    for (const pattern of row.files) columns.files.push(ref(pattern));
    columns.filesCount.push(row.files.length);
    for (const kind of row.tasks) columns.tasks.push(ref(kind));
    columns.tasksCount.push(row.tasks.length);
  }
  columns.ids = ids.join('');
  return columns;
}

/**
 * Is `value` an array of `length` numbers (integers from 0 when `natural`: counts and references)?
 * Values come from JSON, so they are finite; a wrong counter would only misrank a row that the
 * re-read of what is printed corrects, while a wrong count or reference would misplace every row.
 */
function numbers(value: unknown, length: number, natural = false): value is number[] {
  if (!Array.isArray(value) || (length >= 0 && value.length !== length)) return false;
  for (let i = 0; i < value.length; i++) {
    const n: unknown = value[i];
    if (typeof n !== 'number' || (natural && (n < 0 || n % 1 !== 0))) return false;
  }
  return true;
}

function validList(values: unknown, counts: unknown, count: number, strings: number): boolean {
  if (!numbers(values, -1, true) || !numbers(counts, count, true)) return false;
  let total = 0;
  for (let i = 0; i < count; i++) total += counts[i]!;
  if (total !== values.length) return false;
  for (let i = 0; i < values.length; i++) if (values[i]! >= strings) return false;
  return true;
}

/** Columns read back from the cache, or undefined when they are not well-formed (the index is rebuilt). */
export function checkColumns(value: unknown): Columns | undefined {
  const c = value as Partial<Columns> | null;
  if (!c || typeof c.count !== 'number' || !Number.isInteger(c.count) || c.count < 0) return undefined;
  const count = c.count;
  if (typeof c.ids !== 'string' || c.ids.length !== count * ID_WIDTH) return undefined;
  if (!numbers(c.promoted, count) || !numbers(c.hits, count) || !numbers(c.misses, count)) return undefined;
  if (!Array.isArray(c.strings) || !c.strings.every((text) => typeof text === 'string')) return undefined;
  const strings = c.strings.length;
  if (!validList(c.stack, c.stackCount, count, strings)) return undefined;
  if (!validList(c.files, c.filesCount, count, strings) || !validList(c.tasks, c.tasksCount, count, strings)) return undefined;
  // The ids are not checked for order: toColumns sorts them, and were they not sorted a lookup
  // would only miss, which costs a correction in the overlay, never a wrong ranking.
  return c as Columns;
}

/** The id of row `i`. */
export function idAt(columns: Columns, i: number): string {
  return columns.ids.slice(i * ID_WIDTH, (i + 1) * ID_WIDTH);
}

/** Where each row's part of a list starts (prefix sums of the counts; the end is the next start). */
function starts(counts: readonly number[]): Uint32Array {
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
  const list = (values: number[], from: Uint32Array) => values.slice(from[i]!, from[i + 1]!).map((ref) => columns.strings[ref]!);
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
