/**
 * SPEC §7: the progress bar on a terminal. A terminal may report any width — none, 0 (a bare
 * pseudo-terminal under `script`, CI or docker), or nonsense — and the bar must never crash the
 * run it reports on after the work is committed.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_COLUMNS, terminalProgress, usableColumns } from '../../engine/runner/progress.js';

function draw(columns: number | undefined): string[] {
  const written: string[] = [];
  const progress = terminalProgress({ write: (text: string) => written.push(text) }, 'transform', 2, columns);
  progress.tick('1 proposed');
  progress.tick('2 proposed');
  progress.done();
  return written;
}

describe('terminalProgress', () => {
  it('draws at the default width for a terminal reporting 0, no, or an absurd number of columns', () => {
    for (const columns of [0, -1, undefined, Number.NaN, Number.POSITIVE_INFINITY, 2.5, 1e9]) {
      const written = draw(columns);
      expect(written.length, String(columns)).toBeGreaterThan(0);
      for (const text of written) expect(text.replace(/\r/g, '').length, String(columns)).toBe(DEFAULT_COLUMNS - 1);
    }
  });

  it('fits the line to the width a terminal reports', () => {
    for (const columns of [1, 30, 120]) {
      for (const text of draw(columns)) expect(text.replace(/\r/g, '').length).toBe(columns - 1);
    }
    expect(draw(120)[1]).toBe(`\r${'transform [########################################] 2/2 2 proposed'.padEnd(119)}`);
  });

  it('draws a full bar, never a crash, for work past the total (units another run let lapse, taken over at the end)', async () => {
    const written: string[] = [];
    const progress = terminalProgress({ write: (text: string) => written.push(text) }, 'judge', 2, 120);
    for (let i = 1; i <= 3; i++) {
      progress.tick(`${i} judged`);
      await new Promise((resolve) => setTimeout(resolve, 60)); // each tick draws (at most one draw per 50 ms)
    }
    expect(written.at(-1)).toBe(`\r${'judge [########################################] 3/2 3 judged'.padEnd(119)}`);
  });

  it('takes only a positive whole number of columns as a width', () => {
    expect([0, -1, undefined, Number.NaN, 1e9, 1, 80, 200].map(usableColumns)).toEqual([80, 80, 80, 80, 80, 1, 80, 200]);
  });
});
