/**
 * The pool's arithmetic (SPEC §5.8, from ADR-015 and ADR-017/020): hit rate with its low-signal
 * guard, hit weight, recency, the match of a proposal to a session's filters, the top-K ranking
 * and the choice of prune candidates. Pure: rows in, numbers and orders out — the clock is a
 * number passed in, and nothing here reads a store.
 */
import type { HitWeights, PruneConfig, RankingConfig } from './config.js';
import { compileGlob, globCostBound } from './glob.js';

/** What ranking and pruning know of a proposal in use (the derived index holds these). */
export interface PoolRow {
  id: string;
  /** The promotion instant, in ms since the epoch. */
  promoted: number;
  hits: number;
  misses: number;
  /** Lower-cased: stacks compare case-insensitively. */
  stack: string[];
  files: string[];
  tasks: string[];
}

/** The filters of one `pool top`; absent ones do not count in the match. */
export interface Filters {
  /** Lower-cased, no duplicates, at least one. */
  stack?: string[];
  file?: string;
  task?: string;
}

export interface Scored {
  row: PoolRow;
  score: number;
  match: number;
  recency: number;
  hitWeight: number;
  hitRate: number | null;
}

const DAY_MS = 86_400_000;

/** hits / (hits + misses), or null under `minOutcomes` outcomes (too little signal to judge). */
export function hitRate(hits: number, misses: number, minOutcomes: number): number | null {
  const outcomes = hits + misses;
  return outcomes < minOutcomes || outcomes === 0 ? null : hits / outcomes;
}

/** `untested` for a null hit rate, else max(floor, base + rate): proven winners outrank untested ones. */
export function hitWeight(rate: number | null, weights: HitWeights): number {
  return rate === null ? weights.untested : Math.max(weights.floor, weights.base + rate);
}

/** 0.5 ^ (fractional days since promotion / half-life); a promotion in the future counts as now. */
export function recency(promoted: number, now: number, halfLifeDays: number): number {
  const days = Math.max(0, (now - promoted) / DAY_MS);
  return 0.5 ** (days / halfLifeDays);
}

/** Normalize `--stack A,B`: trimmed, lower-cased, without empties or duplicates. */
export function parseStacks(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((name) => name.trim().toLowerCase())
        .filter((name) => name !== ''),
    ),
  ];
}

/**
 * The most steps one proposal's globs may take against the path (a step: one token at one
 * character): ~10 ms here. Real globs take hundreds; a proposal's patterns are untrusted, and 2,000
 * patterns of 64 long alternatives each made one `pool top --file` take 18 s. Past the budget, a
 * proposal's remaining patterns are not tried (they match nothing).
 */
export const GLOB_STEPS_PER_PROPOSAL = 4_000_000;

/** A matcher of file-pattern lists against one path, compiling and answering each distinct glob once, within a budget per list. */
export function fileMatcher(path: string): (patterns: readonly string[]) => boolean {
  const known = new Map<string, boolean>();
  return (patterns) => {
    let budget = GLOB_STEPS_PER_PROPOSAL;
    return patterns.some((pattern) => {
      let hit = known.get(pattern);
      if (hit === undefined) {
        budget -= globCostBound(pattern, path);
        if (budget < 0) return false;
        hit = compileGlob(pattern).matches(path);
        known.set(pattern, hit);
      }
      return hit;
    });
  };
}

/**
 * The mean over the filters given of: the fraction of the named stacks the row has; 1 if one of
 * its globs matches the file, else 0; 1 if it has the task kind, else 0. No filter: 1.
 */
export function matchOf(row: PoolRow, filters: Filters, files?: (patterns: readonly string[]) => boolean): number {
  let sum = 0;
  let count = 0;
  if (filters.stack) {
    const names = filters.stack;
    sum += names.filter((name) => row.stack.includes(name)).length / names.length;
    count++;
  }
  if (filters.file !== undefined) {
    sum += (files ?? fileMatcher(filters.file))(row.files) ? 1 : 0;
    count++;
  }
  if (filters.task !== undefined) {
    sum += row.tasks.includes(filters.task) ? 1 : 0;
    count++;
  }
  return count === 0 ? 1 : sum / count;
}

/** Highest score first; equal scores (exactly) by id, descending — the newest first. */
export function compareScored(a: Scored, b: Scored): number {
  if (a.score !== b.score) return b.score - a.score;
  return a.row.id < b.row.id ? 1 : a.row.id > b.row.id ? -1 : 0;
}

/** Score one row, or undefined when it does not match at all (match 0 is left out). */
export function scoreRow(
  row: PoolRow,
  filters: Filters,
  now: number,
  ranking: RankingConfig,
  files?: (patterns: readonly string[]) => boolean,
): Scored | undefined {
  const match = matchOf(row, filters, files);
  if (match === 0) return undefined;
  const rate = hitRate(row.hits, row.misses, ranking.minOutcomes);
  const weight = hitWeight(rate, ranking.hitWeight);
  const fresh = recency(row.promoted, now, ranking.halfLifeDays);
  return { row, score: match * fresh * weight, match, recency: fresh, hitWeight: weight, hitRate: rate };
}

/** The best `k` scored rows seen so far, best first. */
export class TopK {
  private readonly items: Scored[] = [];
  constructor(private readonly k: number) {}

  /** Would a row of this score enter? Its id is asked for only on a tie with the last one kept. */
  wouldTake(score: number, id: () => string): boolean {
    if (this.items.length < this.k) return true;
    const last = this.items[this.k - 1]!;
    return score !== last.score ? score > last.score : id() > last.row.id;
  }

  /** The last row kept once K are kept (what a new row must beat), else undefined. */
  last(): Scored | undefined {
    return this.items.length < this.k ? undefined : this.items[this.k - 1];
  }

  offer(scored: Scored): void {
    // Most rows fall below the last one kept and cost one comparison.
    if (!this.wouldTake(scored.score, () => scored.row.id)) return;
    let at = this.items.length;
    while (at > 0 && compareScored(scored, this.items[at - 1]!) < 0) at--;
    this.items.splice(at, 0, scored);
    if (this.items.length > this.k) this.items.pop();
  }

  best(): Scored[] {
    return this.items;
  }
}

/** The `k` best rows by score = match × recency × hit_weight, best first; rows that do not match are left out. */
export function rankTop(rows: Iterable<PoolRow>, filters: Filters, now: number, ranking: RankingConfig, k: number): Scored[] {
  const files = filters.file === undefined ? undefined : fileMatcher(filters.file);
  const top = new TopK(k);
  for (const row of rows) {
    const scored = scoreRow(row, filters, now, ranking, files);
    if (scored) top.offer(scored);
  }
  return top.best();
}

/** K as asked, capped: `clamped` says the cap applied (the caller warns). */
export function clampK(requested: number, maxK: number): { k: number; clamped: boolean } {
  return requested > maxK ? { k: maxK, clamped: true } : { k: requested, clamped: false };
}

export interface PruneCandidate {
  row: PoolRow;
  hitRate: number;
}

/**
 * Prune candidates: at least `minOutcomes` outcomes and a (non-null) hit rate below `maxHitRate`;
 * lowest hit rate first, then most outcomes, then the oldest id.
 */
export function pruneCandidates(rows: Iterable<PoolRow>, prune: Pick<PruneConfig, 'minOutcomes' | 'maxHitRate'>, lowSignal: number): PruneCandidate[] {
  const out: PruneCandidate[] = [];
  for (const row of rows) {
    if (row.hits + row.misses < prune.minOutcomes) continue;
    const rate = hitRate(row.hits, row.misses, lowSignal);
    if (rate !== null && rate < prune.maxHitRate) out.push({ row, hitRate: rate });
  }
  return out.sort((a, b) => {
    if (a.hitRate !== b.hitRate) return a.hitRate - b.hitRate;
    const outcomes = b.row.hits + b.row.misses - (a.row.hits + a.row.misses);
    if (outcomes !== 0) return outcomes;
    return a.row.id < b.row.id ? -1 : a.row.id > b.row.id ? 1 : 0;
  });
}
