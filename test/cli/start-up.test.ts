/**
 * What the built CLI loads: a command on a configuration the cache holds never loads the YAML
 * parser or ajv (a fifth and more of the bundle, ~35 ms of every start); a cache miss, `validate`
 * and `show` load them when they need them. Observed on the real binary through a module hook
 * that records every file Node loads. A command on a PostgreSQL store loads pg, and never Node's
 * fetch (undici), which pg's own start-up would load on Node 20 (see scripts/bundle.js).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN, proposalInput, ROOT, tempDir } from '../helpers.js';

/**
 * What a process loads, appended to `log`: each file an ES module hook sees (hooks run off the
 * main thread), and at exit every CommonJS module required (ajv's fallback, the prebuilt
 * validators' helpers) and every Node built-in (`builtin:` lines). Returns the node options that
 * install both.
 */
function loadRecorder(dir: string, log: string): string[] {
  writeFileSync(
    path.join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  if (url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, url + '\\n');\n  return next(url, context);\n}\n`,
  );
  const register = path.join(dir, 'register.mjs');
  writeFileSync(register, "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
  const required = path.join(dir, 'required.cjs');
  writeFileSync(
    required,
    `process.on('exit', () => require('node:fs').appendFileSync(${JSON.stringify(log)}, [...Object.keys(require.cache).map((file) => 'cjs:' + file), ...process.moduleLoadList.map((name) => 'builtin:' + name)].map((line) => line + '\\n').join('')));\n`,
  );
  return ['--import', register, '--require', required];
}

/** The source of every file of the bundle (dist/) the log says was loaded. */
function bundledSource(loaded: string[]): string {
  return loaded
    .filter((url) => url.startsWith('file:') && url.includes('/dist/'))
    .map((url) => readFileSync(fileURLToPath(url), 'utf8'))
    .join('\n');
}

/** Whether the command loaded the YAML parser and ajv's compiler: from the bundle (esbuild marks each bundled file with its path) or from node_modules. */
function run(args: string[], env: NodeJS.ProcessEnv, dir: string, input = ''): { yaml: boolean; ajv: boolean; stdout: string } {
  const log = path.join(dir, `loaded-${Math.random().toString(36).slice(2)}.log`);
  writeFileSync(log, '');
  const result = spawnSync(process.execPath, [...loadRecorder(dir, log), BIN, ...args], { env, encoding: 'utf8', input });
  if (result.status !== 0) throw new Error(`pipeline ${args.join(' ')}: exit ${result.status}: ${result.stderr}`);
  const loaded = readFileSync(log, 'utf8').split('\n');
  const required = loaded.filter((line) => line.startsWith('cjs:'));
  const bundled = bundledSource(loaded);
  const holds = (file: string) =>
    new RegExp(`^// .*node_modules/${file}`, 'm').test(bundled) || required.some((line) => line.includes(`/node_modules/${file}`));
  return { yaml: holds('yaml/'), ajv: holds('ajv/dist/core.js'), stdout: result.stdout };
}

const loads = ({ yaml, ajv }: { yaml: boolean; ajv: boolean }) => ({ yaml, ajv });

describe('start-up', () => {
  it('loads neither the YAML parser nor ajv on a cached configuration, and both on a miss', () => {
    const dir = tempDir('start-up-');
    const env = { ...process.env, PIPELINE_CONFIG_CACHE: path.join(dir, 'cache'), PIPELINE_STORE: path.join(dir, 'store') };
    const pipeline = ['--dir', ROOT];
    expect(loads(run([...pipeline, 'status'], env, dir))).toEqual({ yaml: true, ajv: true });
    expect(loads(run([...pipeline, 'status'], env, dir))).toEqual({ yaml: false, ajv: false });
    expect(loads(run([...pipeline, 'list', '--json'], env, dir))).toEqual({ yaml: false, ajv: false });
    const proposed = run([...pipeline, 'propose', '-'], env, dir, JSON.stringify(proposalInput()));
    expect(loads(proposed)).toEqual({ yaml: false, ajv: false });
    // What loads the YAML package later works from the bundle: show prints YAML, init reads it.
    const id = proposed.stdout.trim();
    const shown = run([...pipeline, 'show', id], env, dir);
    expect([loads(shown), shown.stdout]).toEqual([{ yaml: true, ajv: false }, expect.stringContaining(`id: ${id}`)]);
    expect(loads(run(['init', path.join(dir, 'new')], env, dir))).toEqual({ yaml: true, ajv: false });
    expect(readFileSync(path.join(dir, 'new', '.gitignore'), 'utf8')).toContain('/.pipeline/');
    expect(loads(run([...pipeline, 'validate'], env, dir))).toEqual({ yaml: true, ajv: true });
    // Seven runs of the binary one after another, each loading through a module hook (a thread of
    // its own): 3 s alone, but 31.8 s beside a torture run and two unit suites on two vCPUs
    // (2026-12-06, 04:25), past vitest's 30 s. What this test checks does not depend on time.
  }, 120_000);
});

describe('start-up on a PostgreSQL store', () => {
  it("loads pg from the bundle but never Node's fetch (undici)", () => {
    const dir = tempDir('start-up-pg-');
    const log = path.join(dir, 'loaded.log');
    writeFileSync(log, '');
    const env = { ...process.env, PIPELINE_CONFIG_CACHE: path.join(dir, 'cache') };
    // Nothing listens on port 1: the command loads pg, fails to connect and says so.
    const args = ['--dir', ROOT, '--store', 'postgres://127.0.0.1:1/none', 'status'];
    const result = spawnSync(process.execPath, [...loadRecorder(dir, log), BIN, ...args], { env, encoding: 'utf8' });
    expect([result.status, result.stderr]).toEqual([1, expect.stringContaining('connection refused')]);
    const loaded = readFileSync(log, 'utf8').split('\n');
    expect(bundledSource(loaded)).toMatch(/^\/\/ .*node_modules\/pg\/lib\/stream\.js/m);
    expect(loaded.filter((line) => line.startsWith('builtin:')).length).toBeGreaterThan(10);
    expect(loaded.filter((line) => line.includes('undici'))).toEqual([]);
  });
});
