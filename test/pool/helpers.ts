/**
 * What the pool tests share: proposals in use made through the engine's API (proposed, confirmed
 * privately — no jury — approved and promoted at a chosen instant), the command line in-process
 * with an injected clock, and a snapshot of everything a command could write.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { Io } from '../../engine/cli/io.js';
import { main } from '../../engine/cli/main.js';
import type { JudgeStageDef, PromoteStageDef } from '../../engine/config/types.js';
import { judgeWithVerdicts } from '../../engine/stages/judge.js';
import { promote } from '../../engine/stages/promote.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { candidate, proposalInput, ROOT, SECRET_FILE, storedOf, tempDir, testEngine, type TestEngine } from '../helpers.js';

/** A clock that reads `at` (settable), so promotions can be placed in time. */
export function settableClock(start = '2026-11-01T12:00:00Z'): { clock: () => Date; set: (iso: string) => void } {
  let now = Date.parse(start);
  return { clock: () => new Date(now), set: (iso) => void (now = Date.parse(iso)) };
}

export interface PoolTest extends TestEngine {
  set: (iso: string) => void;
  /** A proposal in use: `applies_to` overrides, promoted at `promotedAt`. */
  inUse(appliesTo?: Record<string, unknown>, promotedAt?: string, claim?: string): Promise<string>;
}

export async function poolTest(): Promise<PoolTest> {
  const { clock, set } = settableClock();
  const t = await testEngine({ clock });
  const judge = t.pipeline.stages.find((stage) => stage.kind === 'judge') as JudgeStageDef;
  const promoteStage = t.pipeline.stages.find((stage) => stage.kind === 'promote') as PromoteStageDef;
  const confirm = findReviewCommand(t.pipeline, 'confirm')!;
  async function inUse(appliesTo: Record<string, unknown> = {}, promotedAt = '2026-11-01T12:00:00Z', claim?: string): Promise<string> {
    const input = proposalInput();
    const applies = { ...(candidate({}, input.artifact_id)['applies_to'] as Record<string, unknown>), ...appliesTo };
    const stack = applies['stack'] as string[];
    applies['scope'] = { kind: 'versioned', versions: Object.fromEntries(stack.map((name) => [name, '>=1'])) };
    const payload = { ...input.candidate, applies_to: applies, ...(claim ? { claim } : {}) };
    const created = await t.engine.propose({ ...input, candidate: payload }, { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(`propose: ${JSON.stringify(created)}`);
    const confirmed = await runReviewCommand(t.engine, confirm, created.id, { visibility: 'private' }, 'cli');
    if (confirmed.kind !== 'committed') throw new Error(`confirm: ${JSON.stringify(confirmed)}`);
    const judged = await judgeWithVerdicts(t.engine, judge, await storedOf(t.store, created.id), { ok: true, value: [] }, { actor: 'cli' });
    if (judged.outcome.kind !== 'committed') throw new Error(`judge: ${JSON.stringify(judged.outcome)}`);
    set(promotedAt);
    const promoted = await promote(t.engine, promoteStage, await storedOf(t.store, created.id), 'cli');
    if (promoted.outcome.kind !== 'committed') throw new Error(`promote: ${JSON.stringify(promoted.outcome)}`);
    return created.id;
  }
  return { ...t, set, inUse };
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

const configCache = tempDir('pipeline-pool-config-');

/** `pipeline pool ARGS` in-process over `storeDir`, at the instant `now`. */
export function pool(storeDir: string, args: string[], options: { env?: Record<string, string>; now?: string } = {}): Promise<Ran> {
  return pipelineIn(storeDir, ['pool', ...args], options);
}

/** `pipeline ARGV` in-process over `storeDir`, at the instant `now` (the clock reads it every time). */
export async function pipelineIn(storeDir: string, argv: string[], options: { env?: Record<string, string>; now?: string } = {}): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const stdin = new PassThrough();
  stdin.end('');
  const io: Io = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin,
    cwd: ROOT,
    env: {
      ...process.env,
      PIPELINE_STORE: storeDir,
      PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE!,
      PIPELINE_CONFIG_CACHE: configCache,
      NO_COLOR: '1',
      PIPELINE_PRUNE_EXECUTE: '',
      ...options.env,
    },
    interactive: false,
    stderrIsTTY: false,
    onInterrupt: () => () => {},
  };
  const at = Date.parse(options.now ?? '2026-11-01T12:00:00Z');
  const code = await main(argv, io, { clock: () => new Date(at) });
  return { code, stdout, stderr };
}

/** Every file a command may write, by path relative to the store (caches and coordination left out). */
export function snapshot(storeDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      const relative = path.relative(storeDir, file);
      if (['cache', '.index', '.locks', '.owners', '.journal', '.claims', '.tmp'].includes(relative)) continue;
      if (statSync(file).isDirectory()) walk(file);
      else out[relative] = readFileSync(file, 'utf8');
    }
  };
  walk(storeDir);
  return out;
}

/** The audit rows of a store. */
export function auditRows(storeDir: string): Record<string, unknown>[] {
  const file = path.join(storeDir, 'events.jsonl');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
    : [];
}
