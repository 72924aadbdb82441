/**
 * Small lies and noise (issue 13): exit codes that tell scripts the truth, summaries that say what
 * happened (what was rejected and why, what was promoted along the way), a rejection never called
 * "already promoted", numbers without float noise, no silent waits, and the one file written
 * outside the store announced. In-process through `main(argv, io)`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../engine/cli/io.js';
import { main } from '../../engine/cli/main.js';
import { tidyNumbers } from '../../engine/util/numbers.js';
import { proposalInput, ROOT, tempDir } from '../helpers.js';
import { runIn, writeProposal } from './memory-io.js';

/** A claim the offline judges decline for public: it names an internal host (disclosure floor). */
const LEAKY = 'pnpm 8 on build.internal refuses lockfiles written by pnpm 7 until they are regenerated';

interface Judged {
  env: Record<string, string>;
  approved: string[];
  rejected: string;
  run: { code: number; stdout: string; stderr: string };
}

async function judgedStore(): Promise<Judged> {
  const env = { PIPELINE_STORE: path.join(tempDir(), 'store') };
  const ids: string[] = [];
  for (const claim of [undefined, undefined, LEAKY]) {
    const ran = await runIn(['propose', '-'], env, { input: JSON.stringify(proposalInput(claim ? { claim } : {})) });
    ids.push(ran.stdout.trim());
  }
  await runIn(['confirm', ids[0]!, '--visibility', 'org'], env);
  await runIn(['confirm', ids[1]!, '--visibility', 'private'], env);
  await runIn(['confirm', ids[2]!, '--visibility', 'public'], env);
  const run = await runIn(['run', 'judge'], env);
  return { env, approved: [ids[0]!, ids[1]!], rejected: ids[2]!, run };
}

describe('run judge says what it did', () => {
  it('lists what was rejected and why, and how many were promoted right after their verdict', async () => {
    const { run, rejected } = await judgedStore();
    expect(run.code).toBe(0);
    expect(run.stdout.replaceAll(rejected, '<rejected>')).toMatchInlineSnapshot(`
      "judge: 2 approved, 1 rejected, 0 could not be judged, 0 refused
        rejected:
          <rejected>  criterion_floor (disclosure), aggregate 0.85
        then promote: 2 promoted, 1 recorded
      "
    `);
  });

  it('keeps --json to the summary object', async () => {
    const { env } = await judgedStore();
    const again = await runIn(['run', 'judge', '--json'], env);
    expect(Object.keys(JSON.parse(again.stdout))).toEqual(['stage', 'counts', 'unjudged', 'refused', 'tokens']);
  });
});

describe('promote never calls a rejection a promotion', () => {
  it("says a rejected proposal's declined row is already recorded", async () => {
    const { env, rejected } = await judgedStore();
    const again = await runIn(['promote', rejected], env);
    expect(again.code).toBe(0);
    expect(again.stdout.replace(rejected, '<id>')).toMatchInlineSnapshot(`
      "<id> is rejected: its declined row is already recorded; nothing changed
      "
    `);
  });

  it('counts approved and rejected apart in run promote', async () => {
    const { env } = await judgedStore();
    const run = await runIn(['run', 'promote'], env);
    expect(run.stdout).toMatchInlineSnapshot(`
      "promote: 0 promoted, 2 already promoted, 0 recorded, 1 already recorded, 0 refused
      "
    `);
  });
});

describe('numbers in text output', () => {
  it('show prints an aggregate without float noise; --json keeps the exact number', async () => {
    const store = path.join(tempDir(), 'store');
    const input = proposalInput();
    const verdict = { rubric_id: 'lesson-promotion', gate_policy: 'majority', score_threshold: 0.75, aggregate_score: 0.8200000000000001, passed: true };
    const id = '01JBQA0000000000000000N01S';
    const file = { id, artifact_id: input.artifact_id, created_at: '2026-11-01T12:00:00Z', status: 'approved', candidate: input.candidate };
    writeProposal(store, id, { ...file, verdict: { ...verdict, reason: 'gate_passed', judges: [] } });
    const text = await runIn(['show', '01JBQA0000000000000000N01S'], { PIPELINE_STORE: store });
    expect(text.stdout).toMatch(/^ {2}aggregate_score: 0\.82$/m);
    const json = await runIn(['show', '01JBQA0000000000000000N01S', '--json'], { PIPELINE_STORE: store });
    expect(JSON.parse(json.stdout).verdict.aggregate_score).toBe(0.8200000000000001);
  });

  it('tidies floats to 12 significant digits and leaves integers alone', () => {
    expect(tidyNumbers({ a: 0.1 + 0.2, b: [1e21, 7, 0.30000000000000004], c: 'x' })).toEqual({ a: 0.3, b: [1e21, 7, 0.3], c: 'x' });
  });
});

describe('exit codes and messages scripts can trust', () => {
  it('refuses run transform --source of a directory that does not exist, exit 1, writing nothing', async () => {
    const store = path.join(tempDir(), 'store');
    const ran = await runIn(['run', 'transform', '--source', '/nonexistent/artifacts'], { PIPELINE_STORE: store });
    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe('');
    expect(ran.stderr).toMatch(/^error: transform: .*\/nonexistent\/artifacts.*\n {2}hint: check the --source directory\n$/);
    expect(existsSync(path.join(store, 'proposals'))).toBe(false);
  });

  it('reads --limit -1 as a value and refuses it as one (not "needs a value")', async () => {
    const ran = await runIn(['run', 'judge', '--limit', '-1'], { PIPELINE_STORE: path.join(tempDir(), 'store') });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatchInlineSnapshot(`
      "error: --limit must be a whole number of 1 or more, got "-1"
      usage: pipeline run [<stage>] [--concurrency N] [--limit N] [--dry-run] [--yes] [--no-cache] [--source DIR]
      "
    `);
  });

  it('does not wait silently for a terminal: propose with no FILE on a terminal is a usage error', async () => {
    let stderr = '';
    const stdin = Object.assign(new PassThrough(), { isTTY: true });
    const io: Io = {
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text) },
      stdin,
      cwd: ROOT,
      env: { ...process.env, PIPELINE_CONFIG_CACHE: 'off', NO_COLOR: '1', PIPELINE_STORE: path.join(tempDir(), 'store') },
      interactive: true,
      stderrIsTTY: false,
      onInterrupt: () => () => {},
    };
    // stdin is never ended: a command that waited on it would never return
    expect(await main(['propose'], io)).toBe(1);
    expect(stderr).toMatchInlineSnapshot(`
      "error: propose: no FILE given, and stdin is a terminal
        hint: give a FILE, pipe the JSON in (… | pipeline propose -), or write - to type it here and end it with Ctrl-D
      "
    `);
  });

  it('announces the author secret it creates, once', async () => {
    const secret = path.join(tempDir(), 'nested', 'author_secret');
    const env = { PIPELINE_STORE: path.join(tempDir(), 'store'), PIPELINE_AUTHOR_SECRET_FILE: secret };
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await runIn(['propose', '-'], env, { input: JSON.stringify(proposalInput()) })).stdout.trim());
    for (const id of ids) await runIn(['confirm', id, '--visibility', 'org'], env);
    const first = await runIn(['run', 'judge'], env);
    expect(existsSync(secret)).toBe(true);
    expect(first.stderr.split(`created the author secret ${secret}`)).toHaveLength(2);
    expect(first.stderr).toMatch(/keep it — a new one would change every value it keys/);
    const id = (await runIn(['propose', '-'], env, { input: JSON.stringify(proposalInput()) })).stdout.trim();
    await runIn(['confirm', id, '--visibility', 'org'], env);
    expect((await runIn(['run', 'judge'], env)).stderr).not.toMatch(/created the author secret/);
  });
});
