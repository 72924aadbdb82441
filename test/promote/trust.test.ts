/**
 * SPEC §5.6: promote trusts nothing it did not decide. A hand-written "approved" file — no
 * history, a no-jury verdict at a jury visibility, a verdict the gate would not give, a candidate
 * the schema refuses — is refused naming why, and nothing is written (no pool entry, no stamp).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { JudgeStageDef, PromoteStageDef } from '../../engine/config/types.js';
import { judgeWithVerdicts } from '../../engine/stages/judge.js';
import { promote } from '../../engine/stages/promote.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { writeProposal } from '../cli/memory-io.js';
import { proposalInput, proposalJson, storedOf, testEngine, type TestEngine } from '../helpers.js';

let t: TestEngine;
let judgeStage: JudgeStageDef;
let stage: PromoteStageDef;
beforeEach(async () => {
  t = await testEngine();
  judgeStage = t.pipeline.stages.find((candidate) => candidate.kind === 'judge') as JudgeStageDef;
  stage = t.pipeline.stages.find((candidate) => candidate.kind === 'promote') as PromoteStageDef;
});

const scores = { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 0.95 };
const panel = [
  { judge_type: 'standard', score: 0.9, passed: true, criterion_scores: scores },
  { judge_type: 'adversarial', score: 0.8, passed: true, criterion_scores: scores },
];

/** A proposal judged for real at `visibility` (committed without its promotion). */
async function judged(visibility: string): Promise<string> {
  const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
  if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
  await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility }, 'cli');
  const result = await judgeWithVerdicts(t.engine, judgeStage, await storedOf(t.store, created.id), { ok: true, value: panel }, { actor: 'cli' });
  if (result.outcome.kind !== 'committed') throw new Error(JSON.stringify(result.outcome));
  return created.id;
}

/** Rewrite a proposal by hand (no commit, no audit row). */
function forge(id: string, change: (proposal: Record<string, any>) => void, as = id): void {
  const proposal = proposalJson(t.storeDir, id);
  change(proposal);
  proposal['id'] = as;
  writeProposal(t.storeDir, as, proposal);
}

async function expectRefused(id: string, reason: RegExp): Promise<void> {
  const result = await promote(t.engine, stage, await storedOf(t.store, id), 'cli');
  expect(result.outcome.kind).toBe('refused');
  expect(result.outcome.kind === 'refused' && result.outcome.message).toMatch(reason);
  expect(existsSync(path.join(t.storeDir, 'approved', `${id}.json`))).toBe(false);
  expect(proposalJson(t.storeDir, id)).not.toHaveProperty('promoted_at');
}

describe('promote re-checks what it did not decide', () => {
  it('promotes a proposal the jury approved (the control)', async () => {
    const id = await judged('public');
    const result = await promote(t.engine, stage, await storedOf(t.store, id), 'cli');
    expect(result.outcome.kind).toBe('committed');
  });

  it('refuses an approved file with no judging in its history', async () => {
    const real = await judged('org');
    const forged = '01ARZ3NDEKTSV4RRFFQ69G5FZZ';
    forge(real, () => {}, forged);
    await expectRefused(forged, /no judging in its history: written by hand\?/);
  });

  it('refuses a no-jury verdict at a visibility that runs a jury', async () => {
    const id = await judged('public');
    forge(id, (proposal) => {
      proposal['verdict'] = {
        rubric_id: null,
        gate_policy: null,
        score_threshold: null,
        aggregate_score: null,
        passed: true,
        reason: 'private_no_jury',
        judges: [],
      };
    });
    await expectRefused(id, /not the no-jury decision its visibility calls for|not decided under rubric/);
  });

  it('refuses a jury verdict the gate would not give', async () => {
    const id = await judged('org');
    forge(id, (proposal) => {
      for (const judge of proposal['verdict'].judges) judge.criterion_scores.grounding = 0.2;
    });
    await expectRefused(id, /does not match the gate/);
  });

  it('refuses an approved proposal whose candidate the schema refuses', async () => {
    const id = await judged('org');
    forge(id, (proposal) => {
      proposal['candidate'].applies_to.scope = { kind: 'versioned', versions: { pnpm: 'latest' } };
    });
    await expectRefused(id, /fails the confirmed-proposal schema/);
  });
});
