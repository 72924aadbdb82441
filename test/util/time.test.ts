/** Timestamps (engine/util/time.ts): RFC 3339 UTC to the second, whatever order the dates come in. */
import { describe, expect, it } from 'vitest';
import { formatTimestamp } from '../../engine/util/time.js';

describe('formatTimestamp', () => {
  it('formats each date to its own second, also when the clock goes back or repeats a second', () => {
    const dates = ['2026-01-01T00:00:00.900Z', '2026-01-01T00:00:00.100Z', '2026-01-01T00:00:01.000Z', '2025-12-31T23:59:59.999Z', '1969-12-31T23:59:59.500Z'];
    for (const iso of dates) expect(formatTimestamp(new Date(iso))).toBe(`${iso.slice(0, 19)}Z`);
  });

  it('refuses an invalid date', () => {
    expect(() => formatTimestamp(new Date(Number.NaN))).toThrow(RangeError);
  });
});
