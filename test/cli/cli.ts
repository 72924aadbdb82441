/**
 * The `pipeline` command line in a temp directory: `cliIn` runs it in this process through
 * `main(argv, io)` (set-up and the conventions of SPEC §7), `cli` and `cliSpawn` run the real
 * binary (build first: `npm test` does) for what only a real process shows.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { Io } from '../../engine/cli/io.js';
import { main } from '../../engine/cli/main.js';
import { BIN, fileConfigCache, ROOT, SECRET_FILE, tempDir } from '../helpers.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  input?: string;
  /** In process only: whether stderr is taken for a terminal (default false). */
  stderrIsTTY?: boolean;
}

/** A fresh store and the environment that points the command line at it (the file's configuration cache). */
export function cliStore(): { store: string; env: Record<string, string> } {
  const store = path.join(tempDir('pipeline-cli-'), 'store');
  const cache = fileConfigCache();
  return { store, env: { PIPELINE_STORE: store, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE!, PIPELINE_CONFIG_CACHE: cache, NO_COLOR: '1' } };
}

function environment(options: CliOptions): Record<string, string> {
  const env = { ...process.env, ...options.env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  return env as Record<string, string>;
}

/** Run the real binary and wait for it. */
export function cli(args: string[], options: CliOptions = {}): CliResult {
  const env = environment(options);
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env, input: options.input ?? '', encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * Run `pipeline ARGS` in this process, as the binary would off a terminal: the same environment,
 * working directory and stdin, stdout and stderr collected, the exit code returned.
 */
export async function cliIn(args: string[], options: CliOptions = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const stdin = new PassThrough();
  stdin.end(options.input ?? '');
  const io: Io = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin,
    cwd: options.cwd ?? ROOT,
    env: environment(options),
    interactive: false,
    stderrIsTTY: options.stderrIsTTY ?? false,
    onInterrupt: () => () => {},
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/** Start the binary without waiting (for signals and races). */
export function cliSpawn(args: string[], options: CliOptions = {}) {
  return spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
}

export function events(store: string): Record<string, unknown>[] {
  const file = path.join(store, 'events.jsonl');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
}

export function proposalFile(store: string, id: string): Record<string, any> {
  return JSON.parse(readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8'));
}

export function ensureDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}
