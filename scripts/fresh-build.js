#!/usr/bin/env node
// Build only when something the build reads has changed. A digest of every input (the engine's
// sources, the configuration schemas, the build scripts, the TypeScript and package settings) is
// kept in dist/.build-inputs; `npm run demo` then starts at once on a current dist/ instead of
// spending 8–20 s rebuilding it. `--stamp` (the last step of `npm run build`) records the digest.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const STAMP = path.join(root, 'dist', '.build-inputs');
const FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.js', 'scripts/compile-validators.js'];
const DIRS = ['engine', 'schemas/config'];

function walk(dir) {
  const full = path.join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    return entry.isDirectory() ? walk(relative) : [relative];
  });
}

/** One digest of the names and contents of every build input, in a fixed order. */
function digest() {
  const hash = createHash('sha256');
  for (const file of [...FILES, ...DIRS.flatMap(walk)].sort()) {
    const full = path.join(root, file);
    if (!existsSync(full)) continue;
    hash.update(`${file}\0`).update(readFileSync(full)).update('\0');
  }
  return hash.digest('hex');
}

const current = digest();
if (process.argv.includes('--stamp')) {
  writeFileSync(STAMP, `${current}\n`);
  process.exit(0);
}
const built = existsSync(STAMP) && existsSync(path.join(root, 'dist', 'pipeline.js')) ? readFileSync(STAMP, 'utf8').trim() : undefined;
if (built === current) process.exit(0);
console.error('building dist/ (its sources changed since the last build)…');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const result = spawnSync(npm, ['run', 'build', '--silent'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
process.exit(result.status ?? 1);
