/** The status index's signature check: the same answer as comparing the text a scan writes. */
import { describe, expect, it } from 'vitest';
import { endsWithSignature } from '../../engine/store/proposal-index.js';

describe('the signature check of a cache line', () => {
  it('agrees with comparing the written text, for times before 1970, fractions, huge inodes, near misses', () => {
    let seed = 11;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const times = [0, 1796591632031.026, 1796591632031, -315619200000, -1.5, 1e21, 0.0001, 1796591632031.0261];
    const wholes = [0, 1, 9, 10, 1109, 2122741, 2 ** 53 - 1, 2 ** 53, 2 ** 64, 1e21];
    const pick = <T>(values: T[]) => values[random(values.length)]!;
    const text = (value: number) => {
      const written = String(value);
      // Near misses: a digit more or less, a leading zero, another number.
      switch (random(8)) {
        case 0:
          return `0${written}`;
        case 1:
          return `${written}1`;
        case 2:
          return written.slice(1);
        case 3:
          return String(pick([...times, ...wholes]));
        default:
          return written;
      }
    };
    let agreed = 0;
    for (let round = 0; round < 20_000; round++) {
      const stat = { mtimeMs: pick(times), size: pick(wholes), ino: pick(wholes), ctimeMs: pick(times) };
      const status = pick(['pending', '', 'bestätigt']);
      const line = `01ARZ3NDEKTSV4RRFFQ69G5FAV\t${status}\t${random(4)}\t${text(stat.mtimeMs)}\t${text(stat.size)}\t${text(stat.ino)}\t${text(stat.ctimeMs)}`;
      const written = line.endsWith(`\t${stat.mtimeMs}\t${stat.size}\t${stat.ino}\t${stat.ctimeMs}`);
      expect([line, stat, endsWithSignature(line, stat)]).toEqual([line, stat, written]);
      if (written) agreed++;
    }
    expect(agreed).toBeGreaterThan(1000); // matches were tried, not only misses
  });
});
