import { closeSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readOpened, readRegular, readRegularStat, TooLarge } from '../../engine/store/files.js';
import { NotRegularFile } from '../../engine/util/atomic-write.js';

describe('readRegular', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const scratch = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pipeline-files-'));
    dirs.push(dir);
    return dir;
  };

  it('reads every size whole, around the 64 KiB where small files stop sharing one buffer', () => {
    const dir = scratch();
    const file = path.join(dir, 'f.json');
    // A two-byte character in each (across the 64 KiB boundary when the file is longer).
    for (const size of [0, 1, 4095, 4096, 4097, 65_534, 65_535, 65_536, 65_537, 65_538, 131_073, 300_001]) {
      const before = size > 65_537 ? 65_535 : Math.floor(size / 2) - 1;
      const text = size < 2 ? 'x'.repeat(size) : `${'a'.repeat(before)}é${'b'.repeat(size - before - 2)}`;
      writeFileSync(file, text);
      expect(Buffer.byteLength(text)).toBe(size);
      const read = readRegular(file);
      expect(read?.length).toBe(text.length);
      expect(read === text).toBe(true);
    }
  });

  it('reads a file whole that grew or shrank since its fstat, whatever its size was', () => {
    const dir = scratch();
    const file = path.join(dir, 'f.json');
    // [the size the fstat saw, the size read]: grown within the scratch buffer, past it (a
    // two-byte character across its end, where a read split in two would show as U+FFFD), far
    // past it, and shrunk after a longer file.
    const cases = [
      [100, 200],
      [65_535, 65_540],
      [100, 65_536],
      [100, 65_537],
      [0, 70_000],
      [10, 300_001],
      [5_000, 10],
    ] as const;
    for (const [seen, size] of cases) {
      const before = Math.min(65_535, size - 2);
      const text = `${'a'.repeat(before)}é${'b'.repeat(size - before - 2)}`;
      writeFileSync(file, text);
      const fd = openSync(file, 'r');
      try {
        const read = readOpened(fd, seen)!;
        expect([seen, size, read.length]).toEqual([seen, size, text.length]);
        expect(read === text).toBe(true);
      } finally {
        closeSync(fd);
      }
    }
  });

  it('never hands out what an earlier, longer file left behind', () => {
    const dir = scratch();
    const long = path.join(dir, 'long.json');
    const short = path.join(dir, 'short.json');
    writeFileSync(long, `{"claim": "${'z'.repeat(5000)}"}`);
    writeFileSync(short, '{}');
    expect(readRegular(long)).toHaveLength(5013);
    expect(readRegular(short)).toBe('{}');
    writeFileSync(short, '');
    expect(readRegular(short)).toBe('');
  });

  it('says undefined for a missing file and refuses a link', () => {
    const dir = scratch();
    expect(readRegular(path.join(dir, 'none.json'))).toBeUndefined();
    writeFileSync(path.join(dir, 'target.json'), '{}');
    symlinkSync(path.join(dir, 'target.json'), path.join(dir, 'link.json'));
    expect(() => readRegular(path.join(dir, 'link.json'))).toThrow(NotRegularFile);
  });

  it('refuses a file past its bound, never reading more than one byte past it, even one that grew since its fstat', () => {
    const dir = scratch();
    const file = path.join(dir, 'big.json');
    for (const size of [10, 65_536, 300_001]) {
      writeFileSync(file, 'x'.repeat(size));
      expect(readRegular(file, size)).toHaveLength(size);
      expect(() => readRegular(file, size - 1)).toThrow(TooLarge);
      expect(() => readRegularStat(file, size - 1)).toThrow(expect.objectContaining({ stat: expect.objectContaining({ size }) }));
      const fd = openSync(file, 'r');
      try {
        // The fstat said it was small: it grew past the bound since.
        expect(readOpened(fd, 5, size - 1)).toBeUndefined();
      } finally {
        closeSync(fd);
      }
    }
  });
});
