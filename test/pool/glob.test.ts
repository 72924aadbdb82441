/**
 * SPEC §5.8, the file match: `*` stays within a path segment, `**` crosses `/`, a pattern without
 * `/` matches the basename. Globs come from proposals, so a hostile one must stay cheap and a
 * malformed one is literal, never an error.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileGlob, expandBraces, globMatches, pathProblem } from '../../engine/pool/glob.js';

describe('glob matching', () => {
  it.each([
    ['src/*.ts', 'src/a.ts', true],
    ['src/*.ts', 'src/deep/a.ts', false],
    ['src/**/*.ts', 'src/deep/er/a.ts', true],
    ['src/**/*.ts', 'src/a.ts', true],
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'x/y/a.ts', true],
    ['src/**', 'src/a/b.c', true],
    ['x/a**b', 'x/a/y/b', true],
    ['a**b', 'a/x/b', false], // no slash: the basename "b" is what is matched
    ['*.ts', 'deep/path/file.ts', true],
    ['*.ts', 'deep/path/file.tsx', false],
    ['vite.config.*', 'apps/web/vite.config.mts', true],
    ['pnpm-lock.yaml', 'pnpm-lock.yaml', true],
    ['pnpm-lock.yaml', 'sub/pnpm-lock.yaml', true],
    ['sub/pnpm-lock.yaml', 'other/sub/pnpm-lock.yaml', false],
    ['?.ts', 'a.ts', true],
    ['?.ts', 'ab.ts', false],
    ['src/?', 'src//', false],
    ['[abc].ts', 'b.ts', true],
    ['[!abc].ts', 'b.ts', false],
    ['[a-c].ts', 'c.ts', true],
    ['*.{ts,tsx}', 'page.tsx', true],
    ['*.{ts,tsx}', 'page.js', false],
    ['{src,lib}/**/*.ts', 'lib/x.ts', true],
    ['\\*.ts', '*.ts', true],
    ['\\*.ts', 'a.ts', false],
    ['[abc', '[abc', true],
    ['{a,b', '{a,b', true],
    ['./src/*.ts', 'src/a.ts', true],
    ['src/*.ts', './src/a.ts', true],
    ['app/[slug]/page.tsx', 'app/s/page.tsx', true],
    ['', 'anything', false],
  ])('%s against %s: %s', (pattern, path, expected) => {
    expect(globMatches(pattern, path)).toBe(expected);
  });

  it('never lets * cross a slash, and always lets ** do it', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z]{1,5}$/), { minLength: 2, maxLength: 5 }), (segments) => {
        const path = segments.join('/');
        const first = segments[0]!;
        return !globMatches(`${first}/*`, path) === segments.length > 2 && globMatches(`${first}/**`, path);
      }),
    );
  });

  it('answers a hostile pattern on a long path without backtracking blow-up', () => {
    const pattern = `${'*a'.repeat(40)}*b`;
    const path = 'a'.repeat(4000);
    // A backtracking matcher needs on the order of 4000^40 steps here; this returns at once.
    expect(globMatches(pattern, path)).toBe(false);
    expect(globMatches(`**${'a**'.repeat(40)}`, `${'a/'.repeat(2000)}a`)).toBe(false);
  });

  it('caps brace expansion and treats an over-long pattern as matching nothing', () => {
    expect(expandBraces('{a,b}{c,d}')).toEqual(['ac', 'bc', 'ad', 'bd']);
    expect(expandBraces('{a,b}'.repeat(10))).toHaveLength(1);
    expect(compileGlob('a'.repeat(2000)).matches('a'.repeat(2000))).toBe(false);
  });
});

describe('the path given to --file', () => {
  it('is refused empty, with control characters, or when it is a glob rather than a path', () => {
    expect(pathProblem('src/app.ts')).toBeUndefined();
    expect(pathProblem('app/[slug]/page.tsx')).toBeUndefined();
    expect(pathProblem('')).toMatch(/empty/);
    expect(pathProblem('a\u0007b')).toMatch(/control character/);
    expect(pathProblem('src/*.ts')).toMatch(/is a glob, not a path/);
    expect(pathProblem('src/?.ts')).toMatch(/is a glob, not a path/);
  });
});

describe('a proposal’s globs against one path, within a budget (its patterns are untrusted)', () => {
  it('tries its patterns in order until the budget is spent; past it they match nothing', async () => {
    const { fileMatcher, GLOB_STEPS_PER_PROPOSAL } = await import('../../engine/pool/ranking.js');
    const path = 'apps/web/vite.config.ts';
    // 1 KiB patterns of 64 brace alternatives: each one costs its bound up front, before it is compiled.
    const hostile = Array.from({ length: 2000 }, (_, i) => `{${Array.from({ length: 64 }, (_, j) => `x${i}-${j}`).join(',')}}${'y'.repeat(600)}`);
    expect(fileMatcher(path)(['vite.config.*', ...hostile])).toBe(true);
    expect(fileMatcher(path)([...hostile, 'vite.config.*'])).toBe(false);
    // Real globs are far within it: dozens of them are tried.
    const real = [...Array.from({ length: 40 }, (_, i) => `src/{a,b}/dir${i}/**/*.ts`), 'apps/*/vite.config.{ts,js}'];
    expect(fileMatcher(path)(real)).toBe(true);
    expect(GLOB_STEPS_PER_PROPOSAL).toBe(4_000_000);
  });
});
