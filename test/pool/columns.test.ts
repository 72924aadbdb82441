/**
 * The derived index's columns: rows survive the round trip through JSON exactly, a damaged cache
 * is rejected (and rebuilt), and ranking over the columns gives exactly what `rankTop` gives over
 * the same rows — same scores to the last bit, same order — whatever the filters and overlay.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkColumns, findRow, rankColumns, rowAt, toColumns } from '../../engine/pool/columns.js';
import type { RankingConfig } from '../../engine/pool/config.js';
import { rankTop, type Filters, type PoolRow } from '../../engine/pool/ranking.js';

const RANKING: RankingConfig = { halfLifeDays: 180, k: 3, maxK: 50, minOutcomes: 3, hitWeight: { untested: 1, base: 0.5, floor: 0.1 } };
const NOW = Date.parse('2026-11-01T12:00:00Z');
const DAY = 86_400_000;

const ulid = fc.stringMatching(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
const rowArb = (id: fc.Arbitrary<string>) =>
  fc.record({
    id,
    // Few distinct instants and counters, so ties in score are common.
    promoted: fc.constantFrom(NOW, NOW - DAY, NOW - 200 * DAY, NOW + DAY),
    hits: fc.nat({ max: 6 }),
    misses: fc.nat({ max: 6 }),
    stack: fc.subarray(['vite', 'node', 'pnpm']),
    files: fc.subarray(['*.ts', 'src/**', 'vite.config.*', '{a,b}.md']),
    tasks: fc.subarray(['debugging', 'dependency-upgrade']),
  });
const rowsArb = fc.uniqueArray(rowArb(ulid), { selector: (row) => row.id, maxLength: 30 });
/** Overlay changes: (which row, its new content or removal). */
const changesArb = fc.array(fc.tuple(fc.nat(), fc.option(rowArb(fc.constant('')), { nil: undefined })));
const filtersArb: fc.Arbitrary<Filters> = fc.record(
  {
    stack: fc.subarray(['vite', 'node', 'react'], { minLength: 1 }),
    file: fc.constantFrom('src/a.ts', 'vite.config.js', 'a.md', 'x/y.py'),
    task: fc.constantFrom('debugging', 'other'),
  },
  { requiredKeys: [] },
);

describe('columns', () => {
  it('give back every row exactly, in id order, through JSON', () => {
    fc.assert(
      fc.property(rowsArb, (rows) => {
        const columns = checkColumns(JSON.parse(JSON.stringify(toColumns(rows))));
        if (!columns) return false;
        const back = Array.from({ length: columns.count }, (_, i) => rowAt(columns, i));
        const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
        return JSON.stringify(back) === JSON.stringify(sorted) && rows.every((row) => findRow(columns, row.id) >= 0);
      }),
    );
  });

  it('are refused when damaged: lengths, counts, references', () => {
    const rows: PoolRow[] = [
      { id: '01JC0000000000000000000001', promoted: NOW, hits: 1, misses: 0, stack: ['vite'], files: [], tasks: ['x'] },
      { id: '01JC0000000000000000000002', promoted: NOW, hits: 0, misses: 0, stack: [], files: ['*.ts'], tasks: [] },
    ];
    const good = toColumns(rows);
    expect(checkColumns(JSON.parse(JSON.stringify(good)))).toBeDefined();
    expect(checkColumns({ ...good, count: 3 })).toBeUndefined();
    expect(checkColumns({ ...good, hits: [1] })).toBeUndefined();
    expect(checkColumns({ ...good, stack: [7] })).toBeUndefined();
    expect(checkColumns({ ...good, stackCount: [2, 0] })).toBeUndefined();
    expect(checkColumns({ ...good, ids: good.ids.slice(1) })).toBeUndefined();
    expect(checkColumns({ ...good, promoted: [NOW, 'x'] })).toBeUndefined();
    expect(checkColumns(null)).toBeUndefined();
  });

  it('rank exactly as rankTop does over the same rows, an overlay replacing or removing some', () => {
    fc.assert(
      fc.property(rowsArb, changesArb, filtersArb, fc.integer({ min: 1, max: 8 }), (rows, changes, filters, k) => {
        const overlay = new Map<string, PoolRow | undefined>();
        for (const [index, change] of changes) {
          const target = rows[index % Math.max(rows.length, 1)];
          if (target) overlay.set(target.id, change ? { ...change, id: target.id } : undefined);
        }
        const merged = [...rows.filter((row) => !overlay.has(row.id)), ...[...overlay.values()].filter((row): row is PoolRow => row !== undefined)];
        const expected = rankTop(merged, filters, NOW, RANKING, k);
        const actual = rankColumns(toColumns(rows), overlay, filters, NOW, RANKING, k);
        return JSON.stringify(actual) === JSON.stringify(expected);
      }),
      { numRuns: 500 },
    );
  });
});
