/**
 * SPEC §5.8, the arithmetic: hit rate and its low-signal guard, hit weight, recency, the match
 * rule, score = match × recency × hit_weight with its tie rule, the K cap and prune selection.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RankingConfig } from '../../engine/pool/config.js';
import {
  clampK,
  compareScored,
  hitRate,
  hitWeight,
  matchOf,
  parseStacks,
  pruneCandidates,
  rankTop,
  recency,
  scoreRow,
  type PoolRow,
} from '../../engine/pool/ranking.js';

const RANKING: RankingConfig = { halfLifeDays: 180, k: 3, maxK: 50, minOutcomes: 3, hitWeight: { untested: 1, base: 0.5, floor: 0.1 } };
const PRUNE = { minOutcomes: 5, maxHitRate: 0.3 };
const DAY = 86_400_000;
const NOW = Date.parse('2026-11-01T12:00:00Z');

let serial = 0;
function row(extra: Partial<PoolRow> = {}): PoolRow {
  serial++;
  return { id: `01JB${String(serial).padStart(22, '0')}`, promoted: NOW, hits: 0, misses: 0, stack: ['vite'], files: [], tasks: [], ...extra };
}

const ulid = fc.stringMatching(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
const rowArb = fc.record({
  id: ulid,
  promoted: fc.integer({ min: NOW - 3 * 365 * DAY, max: NOW }),
  hits: fc.nat({ max: 20 }),
  misses: fc.nat({ max: 20 }),
  stack: fc.subarray(['vite', 'node', 'pnpm', 'react']),
  files: fc.subarray(['*.ts', 'src/**/*.tsx', 'vite.config.*']),
  tasks: fc.subarray(['debugging', 'dependency-upgrade']),
});
const uniqueRows = fc.uniqueArray(rowArb, { selector: (r) => r.id, maxLength: 40 });

describe('hit rate', () => {
  it('is null under 3 outcomes (low signal), hits / (hits + misses) from 3 on', () => {
    expect(hitRate(0, 0, 3)).toBeNull();
    expect(hitRate(2, 0, 3)).toBeNull();
    expect(hitRate(1, 1, 3)).toBeNull();
    expect(hitRate(2, 1, 3)).toBeCloseTo(2 / 3, 15);
    expect(hitRate(0, 3, 3)).toBe(0);
    expect(hitRate(5, 0, 3)).toBe(1);
  });

  it('is always null or in [0, 1]', () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.nat(1000), (hits, misses) => {
        const rate = hitRate(hits, misses, 3);
        return hits + misses < 3 ? rate === null : rate !== null && rate >= 0 && rate <= 1;
      }),
    );
  });
});

describe('hit weight', () => {
  it('is 1.0 untested, 0.5 + hit_rate otherwise, never below 0.1', () => {
    const weights = RANKING.hitWeight;
    expect(hitWeight(null, weights)).toBe(1);
    expect(hitWeight(1, weights)).toBe(1.5);
    expect(hitWeight(0.5, weights)).toBe(1);
    expect(hitWeight(0, weights)).toBe(0.5);
    expect(hitWeight(0, { untested: 1, base: 0, floor: 0.1 })).toBe(0.1);
  });

  it('ranks a proven winner above an untested proposal, and a confirmed loser below it', () => {
    const winner = scoreRow(row({ hits: 3 }), {}, NOW, RANKING)!;
    const untested = scoreRow(row({ hits: 2 }), {}, NOW, RANKING)!;
    const loser = scoreRow(row({ misses: 3 }), {}, NOW, RANKING)!;
    expect(winner.score).toBeGreaterThan(untested.score);
    expect(loser.score).toBeLessThan(untested.score);
  });
});

describe('recency', () => {
  it('halves every half-life, in fractional days from the one instant given', () => {
    expect(recency(NOW, NOW, 180)).toBe(1);
    expect(recency(NOW - 180 * DAY, NOW, 180)).toBeCloseTo(0.5, 15);
    expect(recency(NOW - 360 * DAY, NOW, 180)).toBeCloseTo(0.25, 15);
    expect(recency(NOW - 12 * 3_600_000, NOW, 180)).toBeCloseTo(0.5 ** (0.5 / 180), 15);
  });

  it('counts a promotion in the future as now (never above 1)', () => {
    expect(recency(NOW + 10 * DAY, NOW, 180)).toBe(1);
  });
});

describe('match', () => {
  const lesson = row({ stack: ['vite', 'vitest'], files: ['vite.config.*', 'src/**/*.ts'], tasks: ['debugging'] });

  it('is 1 with no filter', () => {
    expect(matchOf(lesson, {})).toBe(1);
  });

  it('is the fraction of the named stacks the proposal has, case-insensitively', () => {
    expect(matchOf(lesson, { stack: parseStacks('Vite') })).toBe(1);
    expect(matchOf(lesson, { stack: parseStacks('VITE,react') })).toBe(0.5);
    expect(matchOf(lesson, { stack: parseStacks('react,pnpm') })).toBe(0);
    expect(parseStacks(' Vite , ,vite,REACT')).toEqual(['vite', 'react']);
  });

  it('is 1 when a file glob matches the path, else 0; 1 when the task kind is listed, else 0', () => {
    expect(matchOf(lesson, { file: 'vite.config.ts' })).toBe(1);
    expect(matchOf(lesson, { file: 'src/deep/a.ts' })).toBe(1);
    expect(matchOf(lesson, { file: 'README.md' })).toBe(0);
    expect(matchOf(lesson, { task: 'debugging' })).toBe(1);
    expect(matchOf(lesson, { task: 'Debugging' })).toBe(0);
  });

  it('is the mean over the filters given', () => {
    expect(matchOf(lesson, { stack: ['vite', 'react'], file: 'README.md', task: 'debugging' })).toBeCloseTo((0.5 + 0 + 1) / 3, 15);
    expect(matchOf(lesson, { stack: ['vite'], task: 'other' })).toBe(0.5);
  });

  it('leaves out a proposal whose match is 0', () => {
    expect(scoreRow(lesson, { stack: ['react'] }, NOW, RANKING)).toBeUndefined();
    expect(rankTop([lesson], { task: 'nothing' }, NOW, RANKING, 3)).toEqual([]);
  });
});

describe('score and top K', () => {
  it('is match × recency × hit_weight', () => {
    const old = row({ promoted: NOW - 90 * DAY, hits: 3, misses: 1, stack: ['vite', 'node'] });
    const scored = scoreRow(old, { stack: ['vite', 'react'] }, NOW, RANKING)!;
    expect(scored.match).toBe(0.5);
    expect(scored.recency).toBeCloseTo(0.5 ** 0.5, 15);
    expect(scored.hitRate).toBe(0.75);
    expect(scored.hitWeight).toBe(1.25);
    expect(scored.score).toBe(0.5 * 0.5 ** (90 / 180) * 1.25);
  });

  it('orders highest score first and equal scores by id, descending (newest first)', () => {
    const a = row();
    const b = row();
    const c = row({ promoted: NOW - DAY });
    const ranked = rankTop([a, c, b], {}, NOW, RANKING, 3).map((scored) => scored.row.id);
    expect(ranked).toEqual([b.id, a.id, c.id]);
  });

  it('returns at most K, the same K whatever the order of the input', () => {
    fc.assert(
      fc.property(uniqueRows, fc.integer({ min: 1, max: 10 }), fc.integer(), (rows, k, seed) => {
        const shuffled = [...rows].sort((x, y) => ((x.id.charCodeAt(5) * seed) % 7) - ((y.id.charCodeAt(5) * seed) % 7));
        const filters = { stack: ['vite', 'node'] };
        const first = rankTop(rows, filters, NOW, RANKING, k).map((scored) => scored.row.id);
        const second = rankTop(shuffled, filters, NOW, RANKING, k).map((scored) => scored.row.id);
        const reversed = rankTop([...rows].reverse(), filters, NOW, RANKING, k).map((scored) => scored.row.id);
        return first.length <= k && JSON.stringify(first) === JSON.stringify(second) && JSON.stringify(first) === JSON.stringify(reversed);
      }),
      { numRuns: 300 },
    );
  });

  it('is exactly the first K of a full sort by score, then id descending', () => {
    fc.assert(
      fc.property(uniqueRows, fc.integer({ min: 1, max: 10 }), (rows, k) => {
        const all = rows.map((r) => scoreRow(r, {}, NOW, RANKING)!).sort(compareScored);
        for (let i = 1; i < all.length; i++) {
          const [x, y] = [all[i - 1]!, all[i]!];
          if (x.score < y.score || (x.score === y.score && x.row.id < y.row.id)) return false;
        }
        return JSON.stringify(rankTop(rows, {}, NOW, RANKING, k).map((s) => s.row.id)) === JSON.stringify(all.slice(0, k).map((s) => s.row.id));
      }),
      { numRuns: 300 },
    );
  });

  it('caps K at the configured maximum, saying so', () => {
    expect(clampK(3, 50)).toEqual({ k: 3, clamped: false });
    expect(clampK(50, 50)).toEqual({ k: 50, clamped: false });
    expect(clampK(51, 50)).toEqual({ k: 50, clamped: true });
  });
});

describe('prune candidates', () => {
  it('needs at least 5 outcomes and a hit rate under 0.3', () => {
    const counts: [number, number][] = [
      [1, 3],
      [1, 4],
      [2, 3],
      [0, 5],
      [3, 7],
    ];
    const rows = counts.map(([hits, misses]) => row({ hits, misses }));
    const chosen = pruneCandidates(rows, PRUNE, 3).map((candidate) => candidate.row.id);
    expect(chosen).toEqual([rows[3]!.id, rows[1]!.id]);
    expect(pruneCandidates([row({ hits: 3, misses: 7 })], PRUNE, 3)).toEqual([]); // exactly 0.3 is not below
  });

  it('orders lowest hit rate first, then most outcomes, then oldest id — whatever the input order', () => {
    fc.assert(
      fc.property(uniqueRows, (rows) => {
        const listed = pruneCandidates(rows, PRUNE, 3);
        const again = pruneCandidates([...rows].reverse(), PRUNE, 3);
        if (JSON.stringify(listed) !== JSON.stringify(again)) return false;
        for (const candidate of listed) {
          const n = candidate.row.hits + candidate.row.misses;
          if (n < 5 || candidate.hitRate >= 0.3) return false;
        }
        for (let i = 1; i < listed.length; i++) {
          const [x, y] = [listed[i - 1]!, listed[i]!];
          const nx = x.row.hits + x.row.misses;
          const ny = y.row.hits + y.row.misses;
          if (x.hitRate > y.hitRate || (x.hitRate === y.hitRate && (nx < ny || (nx === ny && x.row.id > y.row.id)))) return false;
        }
        return listed.length === rows.filter((r) => r.hits + r.misses >= 5 && r.hits / (r.hits + r.misses) < 0.3).length;
      }),
      { numRuns: 300 },
    );
  });
});
