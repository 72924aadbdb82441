/** Running the real `pipeline` binary in a temp directory (build first: `npm test` does). */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { BIN, ROOT, SECRET_FILE, tempDir } from '../helpers.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  input?: string;
}

/** A fresh store and the environment that points the binary at it. */
export function cliStore(): { store: string; env: Record<string, string> } {
  const store = path.join(tempDir('pipeline-cli-'), 'store');
  const cache = tempDir('pipeline-config-cache-');
  return { store, env: { PIPELINE_STORE: store, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE!, PIPELINE_CONFIG_CACHE: cache, NO_COLOR: '1' } };
}

export function cli(args: string[], options: CliOptions = {}): CliResult {
  const env = { ...process.env, ...options.env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env, input: options.input ?? '', encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Start the binary without waiting (for signals and races). */
export function cliSpawn(args: string[], options: CliOptions = {}) {
  return spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
}

export function events(store: string): Record<string, unknown>[] {
  const file = path.join(store, 'events.jsonl');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
}

export function proposalFile(store: string, id: string): Record<string, any> {
  return JSON.parse(readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8'));
}

export function ensureDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}
