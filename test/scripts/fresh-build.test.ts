/**
 * `npm run demo` builds only when a build input changed (scripts/fresh-build.js): run on a copy of
 * the script in a scratch project whose `build` counts its runs, so the real dist/ is never touched.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers.js';

function project(): string {
  const dir = tempDir('fresh-build-');
  mkdirSync(path.join(dir, 'scripts'));
  mkdirSync(path.join(dir, 'engine'));
  mkdirSync(path.join(dir, 'dist'));
  copyFileSync(path.join(ROOT, 'scripts', 'fresh-build.js'), path.join(dir, 'scripts', 'fresh-build.js'));
  writeFileSync(path.join(dir, 'engine', 'a.ts'), 'export const a = 1;\n');
  // A build that records that it ran, writes its output, and stamps its inputs as the real one does.
  const steps = [
    "node -e \"require('fs').appendFileSync('builds.log','x')\"",
    "node -e \"require('fs').writeFileSync('dist/pipeline.js','')\"",
    'node scripts/fresh-build.js --stamp',
  ];
  const build = steps.join(' && ');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', scripts: { build } }));
  return dir;
}

const run = (dir: string) => spawnSync(process.execPath, ['scripts/fresh-build.js'], { cwd: dir, encoding: 'utf8' });
const builds = (dir: string) => readFileSync(path.join(dir, 'builds.log'), 'utf8').length;

describe('fresh-build', () => {
  it('builds when there is no build, then not again until an input changes', () => {
    const dir = project();
    const first = run(dir);
    expect([first.status, first.stderr]).toEqual([0, 'building dist/ (its sources changed since the last build)…\n']);
    expect(builds(dir)).toBe(1);
    const again = run(dir);
    expect([again.status, again.stderr]).toEqual([0, '']);
    expect(builds(dir)).toBe(1);
    writeFileSync(path.join(dir, 'engine', 'a.ts'), 'export const a = 2;\n');
    expect(run(dir).status).toBe(0);
    expect(builds(dir)).toBe(2);
    // Three runs of the script, two of them `npm run build` (npm and three Node processes each):
    // 2.2–2.7 s alone, 21.4 s beside a torture run and two unit suites (2026-12-06).
  }, 120_000);
});
