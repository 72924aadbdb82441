/**
 * Builders for rescore tests: judges' verdicts, and stores holding judged proposals committed
 * through the engine exactly as the judge stage commits them (approve/reject with `{verdict}`),
 * plus declined rows in the shape promote appends.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { Rubric } from '../../engine/config/types.js';
import { decideJury, noJuryVerdict, type JuryVerdict } from '../../engine/jury/gate.js';
import type { Verdict } from '../../engine/jury/verdict.js';
import { ORG_RUBRIC } from '../fixtures/rubrics.js';
import { cliIn } from '../cli/cli.js';
import { proposalInput, type TestEngine } from '../helpers.js';

/** The shipped org rubric, verbatim (SPEC §5.4). */
export const ORG: Rubric = ORG_RUBRIC;

export function judge(judge_type: string, criterion_scores: Record<string, number>, passed = true): Verdict {
  const values = Object.values(criterion_scores);
  const score = values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0.5;
  return { judge_type, score, passed, criterion_scores, usage: { tokens_in: null, tokens_out: null } };
}

/** Both seats of the shipped panel with the same criterion scores (so each mean is that score). */
export function panel(grounding: number, scope_accuracy: number, generality: number): Verdict[] {
  const scores = { grounding, scope_accuracy, generality };
  return [judge('standard', scores), judge('adversarial', scores)];
}

/** The verdict the judge stage would commit for `judges` under `rubric`. */
export function verdictOf(rubric: Rubric, judges: Verdict[]): JuryVerdict {
  const decision = decideJury(rubric, judges);
  if (!decision.ok) throw new Error(`test panel is unjudged: ${decision.reason}`);
  return decision.verdict;
}

const VISIBILITY: Record<string, string> = { 'lesson-promotion': 'org', 'lesson-promotion-public': 'public' };

export interface Judged {
  id: string;
  artifact_id: string;
  verdict: JuryVerdict;
}

/** Propose, confirm and commit a verdict. `null` rubric = the no-jury tier. */
export async function commitJudged(t: TestEngine, rubric: Rubric | null, judges: Verdict[] = []): Promise<Judged> {
  const { engine } = t;
  const input = proposalInput();
  const created = await engine.propose(input, { stage: 'propose', actor: 'cli' });
  if (created.kind !== 'committed') throw new Error(`propose failed: ${JSON.stringify(created)}`);
  const id = created.id;
  const confirmed = await engine.apply(id, 'confirm', { visibility: rubric ? VISIBILITY[rubric.id]! : 'private' }, { stage: 'review', actor: 'cli' });
  if (confirmed.kind !== 'committed') throw new Error(`confirm failed: ${JSON.stringify(confirmed)}`);
  const verdict = rubric ? verdictOf(rubric, judges) : noJuryVerdict('private_no_jury');
  const judged = await engine.apply(id, verdict.passed ? 'approve' : 'reject', { verdict }, { stage: 'judge', actor: 'run' });
  if (judged.kind !== 'committed') throw new Error(`verdict failed: ${JSON.stringify(judged)}`);
  return { id, artifact_id: input.artifact_id, verdict };
}

/** The row promote appends to declined.jsonl for a rejected proposal (SPEC §5.6). */
export function declinedRow({ id, artifact_id, verdict }: Judged): Record<string, unknown> {
  return { artifact_id, id, reason: verdict.reason, detail: null, declined_at: '2026-11-01T12:00:00Z', verdict };
}

/** Every file under `dir` with its bytes, and every directory: a store's complete state. */
export function snapshotTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string): void => {
    for (const name of readdirSync(at).sort()) {
      const full = path.join(at, name);
      const relative = path.relative(dir, full);
      if (statSync(full).isDirectory()) {
        out[`${relative}/`] = '';
        walk(full);
      } else out[relative] = readFileSync(full).toString('base64');
    }
  };
  walk(dir);
  return out;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the command line in process (asynchronous, so a test's server keeps serving). */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<CliResult> {
  return cliIn(args, { cwd: options.cwd, env: { PIPELINE_CONFIG_CACHE: 'off', NO_COLOR: '1', ...options.env } });
}

export function expectOk(result: CliResult): void {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
}
