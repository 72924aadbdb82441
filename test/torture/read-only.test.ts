/**
 * SPEC §4: read-only commands (`status`, `list`, `show`, `rescore`, `viz`, `pool top`, a dry-run
 * `pool prune`) change nothing in the store but derived caches, and work on a store they cannot write. The binary runs as `nobody`
 * over a store it may read but not write (the tests run as root, whom permissions do not stop);
 * elsewhere the test checks that nothing but `.index/` changes.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, readableCheckout, ROOT } from '../helpers.js';
import { confirmedStore, run, storeEnv } from './harness.js';

/** Every file under `dir` but the derived caches (`.index/`, and `cache/`, which SPEC §4 says is never
 * required for correctness: `pool top` keeps its ranking index there), for before/after comparisons. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const full = path.join(at, name);
      const relative = path.relative(dir, full);
      if (relative === '.index' || relative === 'cache') continue;
      if (statSync(full).isDirectory()) walk(full);
      else out[relative] = readFileSync(full, 'base64');
    }
  };
  walk(dir);
  return out;
}

const asRoot = process.getuid?.() === 0;
const READ_ONLY = [
  ['status'],
  ['list', '--state', 'approved'],
  ['list', '--json'],
  ['viz', '--format', 'json'],
  ['rescore', '--rubric', 'rubrics/lesson-promotion.yaml'],
  // The pool's reads: the ranking and a dry-run prune (what it would archive) write nothing but the ranking index.
  ['pool', 'top', '--k', '5'],
  ['pool', 'prune'],
  ['pool', 'prune', '--json'],
];

describe('read-only commands', () => {
  it('change nothing in the store but its derived caches', async () => {
    const t = await confirmedStore(6, ['org']);
    const env = storeEnv(t.storeDir);
    expect((await run(['run', 'judge', '--yes'], env)).code).toBe(0);
    const before = tree(t.storeDir);
    for (const args of [...READ_ONLY, ['show', t.ids[0]!], ['show', t.ids[1]!, '--json']]) {
      const result = await run(args, env);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
    expect(tree(t.storeDir)).toEqual(before);
  }, 60_000);

  it('work on a store they cannot write', async () => {
    const t = await confirmedStore(6, ['org']);
    const env = storeEnv(t.storeDir);
    expect((await run(['run', 'judge', '--yes'], env)).code).toBe(0);
    chmodSync(t.storeDir, 0o755); // mkdtemp makes it 0700
    // Root is not stopped by permissions: it runs the binary as nobody. Anyone else loses write access.
    if (!asRoot) spawnSync('chmod', ['-R', 'a-w', t.storeDir]);
    const before = tree(t.storeDir);
    const { root, bin } = asRoot ? readableCheckout('nobody') : { root: ROOT, bin: BIN };
    for (const args of [...READ_ONLY, ['show', t.ids[0]!]]) {
      const command = asRoot ? ['runuser', '-u', 'nobody', '--', process.execPath, bin, ...args] : [process.execPath, bin, ...args];
      const result = spawnSync(command[0]!, command.slice(1), {
        cwd: root,
        env: { ...env, PIPELINE_CONFIG_CACHE: 'off', HOME: '/nonexistent' },
        encoding: 'utf8',
      });
      expect(result.status, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(result.stderr, args.join(' ')).not.toMatch(/EACCES|permission denied|internal error/i);
    }
    expect(tree(t.storeDir)).toEqual(before);
    if (!asRoot) spawnSync('chmod', ['-R', 'u+w', t.storeDir]);
  }, 60_000);
});
