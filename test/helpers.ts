/** Shared test helpers: temp directories, the shipped pipeline over a temp store, a fixed clock. */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, cpSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach } from 'vitest';
import { loadPipeline, type Pipeline } from '../engine/config/load.js';
import type { ProviderSource } from '../engine/providers/index.js';
import type { RunOptions } from '../engine/runner/driver.js';
import { Engine } from '../engine/engine.js';
import type { FileStore } from '../engine/store/file-store.js';
import type { Stored } from '../engine/store/types.js';
import { openFileStore } from '../engine/store/open.js';
import { ulidGenerator } from '../engine/util/ids.js';

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

// No test writes the real per-user secret: every test process gets its own author secret file.
process.env['PIPELINE_AUTHOR_SECRET_FILE'] ??= path.join(mkdtempSync(path.join(os.tmpdir(), 'pipeline-secret-')), 'author_secret');

/** The author secret file the shipped pipeline uses in this test process. */
export const SECRET_FILE = process.env['PIPELINE_AUTHOR_SECRET_FILE'];
export const BIN = path.join(ROOT, 'bin', 'pipeline.js');

let copied: string | undefined;
afterAll(() => {
  if (copied) rmSync(copied, { recursive: true, force: true });
});
/**
 * The checkout (the built binary and the shipped pipeline) where `user` can read it, for a test
 * that runs the binary as another user (root passes every permission check, so those tests run it
 * as `nobody`): the checkout itself when that user can read it, else a copy of what the binary
 * reads under the system's temp directory — a clone under a 0700 directory, as `mktemp -d` makes
 * one, can be read by nobody else.
 */
export function readableCheckout(user: string): { root: string; bin: string } {
  const here = { root: ROOT, bin: BIN };
  if (spawnSync('runuser', ['-u', user, '--', 'test', '-r', BIN]).status === 0) return here;
  if (!copied) {
    copied = mkdtempSync(path.join(os.tmpdir(), 'pipeline-checkout-'));
    chmodSync(copied, 0o755);
    for (const entry of ['bin', 'dist', 'package.json', 'pipeline.yaml', 'machines', 'stages', 'rubrics', 'schemas'])
      cpSync(path.join(ROOT, entry), path.join(copied, entry), { recursive: true });
    spawnSync('chmod', ['-R', 'a+rX', copied]);
  }
  return { root: copied, bin: path.join(copied, 'bin', 'pipeline.js') };
}

const made: string[] = [];
afterEach(() => {
  // Retried: a file store a test left open may have its temp-file worker making a file in one of
  // its lanes for a few more milliseconds (a removal racing it fails with ENOTEMPTY). The store
  // contract closes every store it opens first.
  while (made.length) rmSync(made.pop()!, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
});

/** A temp directory removed after the test. */
export function tempDir(prefix = 'pipeline-test-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

let configCache: string | undefined;
afterAll(() => {
  if (configCache) rmSync(configCache, { recursive: true, force: true });
});

/**
 * The configuration cache directory of this test file (PIPELINE_CONFIG_CACHE), one per file: the
 * cache is keyed by every input, so sharing it between tests changes nothing but the time.
 */
export function fileConfigCache(): string {
  return (configCache ??= mkdtempSync(path.join(os.tmpdir(), 'pipeline-config-cache-')));
}

/** A copy of the shipped pipeline in a temp directory (to edit its YAML in a test). */
export function copyPipeline(): string {
  const dir = tempDir('pipeline-copy-');
  for (const entry of ['pipeline.yaml', 'machines', 'stages', 'rubrics', 'schemas', 'examples'])
    cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  return dir;
}

/** A copy of the shipped pipeline with `edits` (file → text → text) applied; each must change its file. */
export function editedPipeline(edits: Record<string, (text: string) => string>): string {
  const dir = copyPipeline();
  for (const [file, edit] of Object.entries(edits)) {
    const full = path.join(dir, file);
    const before = readFileSync(full, 'utf8');
    const after = edit(before);
    if (after === before) throw new Error(`the edit of ${file} changed nothing`);
    writeFileSync(full, after);
  }
  return dir;
}

/** A clock that starts at a fixed instant and moves one second per reading. */
export function fixedClock(start = '2026-11-01T12:00:00Z'): () => Date {
  let t = Date.parse(start);
  return () => {
    const now = new Date(t);
    t += 1000;
    return now;
  };
}

const pipelines = new Map<string, Promise<Pipeline>>();

/** The shipped pipeline (loaded once per test file), or the one in `dir`. */
export function shippedPipeline(dir = ROOT): Promise<Pipeline> {
  if (!pipelines.has(dir)) pipelines.set(dir, loadPipeline(dir, { ...process.env, PIPELINE_CONFIG_CACHE: 'off' }, { useCache: false }));
  return pipelines.get(dir)!;
}

export interface TestEngine {
  engine: Engine;
  store: FileStore;
  storeDir: string;
  pipeline: Pipeline;
}

/** An engine over the shipped pipeline (or `dir`) and a fresh temp store. */
export async function testEngine(options: { dir?: string; storeDir?: string; clock?: () => Date } = {}): Promise<TestEngine> {
  const pipeline = await shippedPipeline(options.dir ?? ROOT);
  const storeDir = options.storeDir ?? tempDir('pipeline-store-');
  const store = openFileStore(pipeline, storeDir);
  const engine = new Engine({ pipeline, store, clock: options.clock ?? fixedClock(), ids: ulidGenerator() });
  return { engine, store, storeDir, pipeline };
}

let artifactCounter = 0;

/** A fresh valid ULID-like artifact id (deterministic per test file). */
export function artifactId(): string {
  artifactCounter++;
  return `01JBQ${String(artifactCounter).padStart(21, '0')}`;
}

/** A valid candidate for the shipped pipeline. */
export function candidate(overrides: Record<string, unknown> = {}, id = artifactId()): Record<string, unknown> {
  return {
    claim: 'pnpm 8 refuses lockfiles written by pnpm 7 until they are regenerated',
    rationale: 'The lockfile format changed in pnpm 8, and installs abort on the older format instead of migrating it.',
    evidence: {
      artifact_ids: [id],
      session_ids: ['session-1'],
      project_key: '0123456789ab',
      observed_at: '2026-11-01T10:00:00Z',
      resolution: 'Ran pnpm install --lockfile-only once after upgrading, then committed the new lockfile.',
    },
    applies_to: {
      stack: ['pnpm'],
      scope: { kind: 'versioned', versions: { pnpm: '>=8 <9' } },
      file_patterns: ['pnpm-lock.yaml'],
      task_kinds: ['dependency-upgrade'],
    },
    ...overrides,
  };
}

/** `{artifact_id, candidate}` input for propose. */
export function proposalInput(overrides: Record<string, unknown> = {}): { artifact_id: string; candidate: Record<string, unknown> } {
  const id = artifactId();
  return { artifact_id: id, candidate: candidate(overrides, id) };
}

/** The proposal file of `id` in a store directory, parsed. */
export function proposalJson(storeDir: string, id: string): Record<string, any> {
  return JSON.parse(readFileSync(path.join(storeDir, 'proposals', `${id}.json`), 'utf8')) as Record<string, any>;
}

/** The stored proposal (with its version) of `id`; throws unless it is found. */
export async function storedOf(store: FileStore, id: string): Promise<Stored> {
  const result = await store.read(id);
  if (result.kind !== 'found') throw new Error(`${id}: ${result.kind}`);
  return result.stored;
}

export function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/**
 * Untrusted text built to make a backtracking pattern quadratic: long runs of what the scanners'
 * and the checks' quantifiers accept, each ended by a character that stops it (SPEC §6).
 */
export function adversarialText(size: number): string {
  const runs = ['a', 'a-', 'eyJ-', '0', 'a.', 'x@', 'a:'];
  return `${runs.map((unit) => unit.repeat(Math.ceil(size / runs.length / unit.length))).join('!\n')}!`;
}

/** Options of a batch run for `runStage` with nobody at a terminal: yes to everything, no progress, notes dropped — `extra` overrides any of them. */
export function quietRun(extra: Partial<RunOptions & { providers: ProviderSource }> = {}): RunOptions & { providers?: ProviderSource } {
  return {
    concurrency: 2,
    dryRun: false,
    yes: true,
    useCache: false,
    cwd: ROOT,
    interactive: false,
    ask: async () => false,
    progress: () => ({ tick() {}, done() {} }),
    note: () => {},
    ...extra,
  };
}
