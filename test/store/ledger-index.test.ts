/**
 * The ledger index (store/ledger-index.ts): which values a field takes in an append-only ledger,
 * read in pieces whatever the ledger's size, a line no pipeline writes passed over, and a torn last
 * line read once, not on every question (hand-made and hostile ledgers: SPEC §12).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LedgerIndex, ledgerBytesRead, setLedgerChunk } from '../../engine/store/ledger-index.js';
import { tempDir } from '../helpers.js';

afterEach(() => setLedgerChunk());

const row = (n: number) => `${JSON.stringify({ key: `k-${n}`, reason: 'x'.repeat(n % 7) })}\n`;

describe('the ledger index', () => {
  it('finds every row of a ledger read in pieces smaller than its rows, across every boundary', () => {
    setLedgerChunk(64);
    const file = path.join(tempDir(), 'declined.jsonl');
    writeFileSync(file, Array.from({ length: 200 }, (_, n) => row(n)).join(''));
    const index = new LedgerIndex();
    for (let n = 0; n < 200; n++) expect(index.has(file, 'key', `k-${n}`)).toBe(true);
    expect(index.has(file, 'key', 'k-200')).toBe(false);
    appendFileSync(file, row(200));
    expect(index.has(file, 'key', 'k-200')).toBe(true);
  });

  it('passes over a line longer than a piece (no row), and finds the rows after it', () => {
    setLedgerChunk(64);
    const file = path.join(tempDir(), 'declined.jsonl');
    writeFileSync(file, `${row(1)}${JSON.stringify({ key: 'huge', pad: 'y'.repeat(1000) })}\n${row(2)}`);
    const index = new LedgerIndex();
    expect(index.has(file, 'key', 'k-1')).toBe(true);
    expect(index.has(file, 'key', 'k-2')).toBe(true);
    expect(index.has(file, 'key', 'huge')).toBe(false);
  });

  it('reads a torn last line once, not on every question; once it ends, the rows after it count', () => {
    const file = path.join(tempDir(), 'declined.jsonl');
    writeFileSync(file, `${row(1)}{"key":"torn","pad":"${'z'.repeat(100_000)}`);
    const index = new LedgerIndex();
    expect(index.has(file, 'key', 'k-1')).toBe(true);
    const before = ledgerBytesRead();
    for (let n = 0; n < 50; n++) expect(index.has(file, 'key', 'torn')).toBe(false);
    expect(ledgerBytesRead()).toBe(before);
    appendFileSync(file, `\n${row(3)}`);
    expect(index.has(file, 'key', 'k-3')).toBe(true);
    expect(index.has(file, 'key', 'torn')).toBe(false);
  });
});
