/**
 * From a proposal to the row the pool ranks (the fields named in `pool.fields`). Pure.
 */
import type { Proposal } from '../lifecycle/effects.js';
import { countFrom, getPath } from '../util/json-path.js';
import type { PoolConfig } from './config.js';
import type { PoolRow } from './ranking.js';

/** A counter as the pool reads it, and as `increment` counts on from it: absent, or anything but a whole number ≥ 0, is 0. */
export function counterOf(proposal: Proposal, path: string): number {
  return countFrom(getPath(proposal, path));
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
