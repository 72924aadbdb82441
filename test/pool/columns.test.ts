/**
 * The derived index's columns: rows survive the round trip through the cache's bytes exactly, a damaged cache
 * is rejected (and rebuilt), and ranking over the columns gives exactly what `rankTop` gives over
 * the same rows — same scores to the last bit, same order — whatever the filters and overlay.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Columns, findRow, rankColumns, rowAt, toColumns } from '../../engine/pool/columns.js';
import { decodeIndex, encodeIndex } from '../../engine/pool/index-bytes.js';
import type { RankingConfig } from '../../engine/pool/config.js';
import { rankTop, type Filters, type PoolRow } from '../../engine/pool/ranking.js';

const RANKING: RankingConfig = { halfLifeDays: 180, k: 3, maxK: 50, minOutcomes: 3, hitWeight: { untested: 1, base: 0.5, floor: 0.1 } };
const NOW = Date.parse('2026-11-01T12:00:00Z');
const DAY = 86_400_000;
const align8 = (n: number) => Math.ceil(n / 8) * 8;

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
  it('give back every row exactly, in id order, and the meta beside them, through the bytes the cache keeps', () => {
    fc.assert(
      fc.property(rowsArb, (rows) => {
        const decoded = decodeIndex(Buffer.from(encodeIndex({ cursor: 'c1', removed: ['x'] }, toColumns(rows))));
        if (!decoded || JSON.stringify(decoded.meta) !== '{"cursor":"c1","removed":["x"]}') return false;
        const { columns } = decoded;
        const back = Array.from({ length: columns.count }, (_, i) => rowAt(columns, i));
        const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
        return JSON.stringify(back) === JSON.stringify(sorted) && rows.every((row) => findRow(columns, row.id) >= 0);
      }),
    );
  });

  it('are refused when damaged: the layout, lengths, counts, references, numbers no row holds', () => {
    const rows: PoolRow[] = [
      { id: '01JC0000000000000000000001', promoted: NOW, hits: 1, misses: 0, stack: ['vite'], files: [], tasks: ['x'] },
      { id: '01JC0000000000000000000002', promoted: NOW, hits: 0, misses: 0, stack: [], files: ['*.ts'], tasks: [] },
    ];
    const good = toColumns(rows);
    const bytes = (columns: Columns) => Buffer.from(encodeIndex({}, columns));
    expect(decodeIndex(bytes(good))?.columns).toEqual(good);
    expect(decodeIndex(bytes({ ...good, hits: Float64Array.of(0, 0), stack: Uint32Array.of(1), stackCount: Uint32Array.of(1, 0) }))).toBeDefined();
    // Columns that toColumns never makes.
    expect(decodeIndex(bytes({ ...good, count: 3 }))).toBeUndefined();
    expect(decodeIndex(bytes({ ...good, hits: Float64Array.of(1) }))).toBeUndefined();
    expect(decodeIndex(bytes({ ...good, stack: Uint32Array.of(7) }))).toBeUndefined();
    expect(decodeIndex(bytes({ ...good, stackCount: Uint32Array.of(2, 0) }))).toBeUndefined();
    expect(decodeIndex(bytes({ ...good, ids: good.ids.slice(1) }))).toBeUndefined();
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) expect(decodeIndex(bytes({ ...good, promoted: Float64Array.of(NOW, bad) }))).toBeUndefined();
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) expect(decodeIndex(bytes({ ...good, misses: Float64Array.of(0, bad) }))).toBeUndefined();
    // Bytes that are not the layout.
    const whole = bytes(good);
    expect(decodeIndex(whole.subarray(0, whole.length - 8))).toBeUndefined();
    expect(decodeIndex(Buffer.concat([whole, Buffer.alloc(8)]))).toBeUndefined();
    expect(decodeIndex(Buffer.concat([Buffer.from('PIX3'), whole.subarray(4)]))).toBeUndefined();
    const longHeader = Buffer.from(whole);
    longHeader.writeUInt32LE(whole.length, 4);
    expect(decodeIndex(longHeader)).toBeUndefined();
    const headLength = whole.readUInt32LE(4);
    const header = JSON.parse(whole.toString('utf8', 8, 8 + headLength));
    const withHeader = (value: string) => {
      const copy = Buffer.from(whole);
      copy.write(value.padEnd(headLength), 8, 'utf8');
      return copy;
    };
    expect(decodeIndex(withHeader(JSON.stringify(header)))).toBeDefined();
    expect(decodeIndex(withHeader(JSON.stringify({ ...header, count: 1e15 })))).toBeUndefined();
    expect(decodeIndex(withHeader(JSON.stringify({ ...header, strings: ['vite', 7] })))).toBeUndefined();
    expect(decodeIndex(withHeader(JSON.stringify({ ...header, meta: [] })))).toBeUndefined();
    expect(decodeIndex(withHeader('not json'))).toBeUndefined();
    expect(decodeIndex(Buffer.alloc(0))).toBeUndefined();
    // Ids that are not ULIDs, or not in ascending order, or twice; padding that is not zeros.
    const second = good.ids.slice(26);
    for (const ids of [
      `01jc0000000000000000000001${second}`,
      `81JC0000000000000000000001${second}`,
      `${second}01JC0000000000000000000001`,
      `${second}${second}`,
    ])
      expect(decodeIndex(bytes({ ...good, ids })), ids).toBeUndefined();
    const padded = Buffer.from(whole);
    padded[align8(8 + headLength) - 1] = 0x20;
    expect(align8(8 + headLength)).toBeGreaterThan(8 + headLength);
    expect(decodeIndex(padded)).toBeUndefined();
    // A string twice in the table, or a stack named twice in a row (rowOf never makes either).
    expect(decodeIndex(bytes({ ...good, strings: ['vite', 'x', 'vite'] }))).toBeUndefined();
    expect(decodeIndex(bytes({ ...good, stack: Uint32Array.of(0, 0), stackCount: Uint32Array.of(2, 0) }))).toBeUndefined();
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
