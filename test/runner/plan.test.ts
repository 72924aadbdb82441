/**
 * The spend plan stated before a batch (SPEC §5.4): engine/runner/plan.ts over the units as the
 * judge stage sees them (judge-run.ts `plan`): units per rubric and per no-jury reason, model
 * calls (deterministic seats make none), paid calls and the paid providers by name, refusals.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { JudgeStageDef } from '../../engine/config/types.js';
import type { Provider } from '../../engine/providers/types.js';
import { judgeBatchPlan, planLines, singleCallPlan, type SeatCost } from '../../engine/runner/plan.js';
import type { RunOptions } from '../../engine/runner/driver.js';
import { Providers } from '../../engine/providers/index.js';
import { judgeWithProviders } from '../../engine/stages/judge.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { judgeRun } from '../../engine/stages/judge-run.js';
import { proposalInput, storedOf, testEngine, type TestEngine } from '../helpers.js';

const paid = (name: string): SeatCost => ({ name, paid: true, deterministic: false });
const free = (name: string): SeatCost => ({ name, paid: false, deterministic: false });
const checks = (name: string): SeatCost => ({ name, paid: true, deterministic: true });

describe('judgeBatchPlan', () => {
  it('counts units per rubric and per no-jury reason, a call per seat that is not deterministic, paid calls per paid seat', () => {
    const plan = judgeBatchPlan('judge', [
      { kind: 'jury', rubric: 'r-org', seats: [paid('claude'), free('ollama')] },
      { kind: 'jury', rubric: 'r-org', seats: [paid('claude'), checks('lint')] },
      { kind: 'jury', rubric: 'r-public', seats: [paid('claude'), paid('gpt')] },
      { kind: 'no_jury', reason: 'private_no_jury' },
      { kind: 'no_jury', reason: 'private_no_jury' },
      { kind: 'refused' },
    ]);
    expect(plan).toEqual({
      stage: 'judge',
      items: 6,
      groups: { 'r-org': 2, 'r-public': 1, 'no jury (private_no_jury)': 2 },
      calls: 5,
      paidCalls: 4,
      paidProviders: ['claude', 'gpt'],
      refused: 1,
    });
  });

  it('is empty for no units, and makes no call for a deterministic seat even when it is marked paid', () => {
    expect(judgeBatchPlan('j', [])).toEqual({ stage: 'j', items: 0, groups: {}, calls: 0, paidCalls: 0, paidProviders: [], refused: 0 });
    expect(judgeBatchPlan('j', [{ kind: 'jury', rubric: 'r', seats: [checks('a'), checks('b')] }])).toMatchObject({
      calls: 0,
      paidCalls: 0,
      paidProviders: [],
    });
  });
});

describe('singleCallPlan', () => {
  it('is one call per unit to the provider: paid when it is, none when it is deterministic', () => {
    expect(singleCallPlan('transform', 3, paid('claude'))).toEqual({
      stage: 'transform',
      items: 3,
      groups: {},
      calls: 3,
      paidCalls: 3,
      paidProviders: ['claude'],
      refused: 0,
    });
    expect(singleCallPlan('transform', 3, free('ollama'))).toMatchObject({ calls: 3, paidCalls: 0, paidProviders: [] });
    expect(singleCallPlan('transform', 3, { name: 'mapper', paid: false, deterministic: true })).toMatchObject({ calls: 0, paidCalls: 0 });
  });
});

describe('planLines', () => {
  it('states units (with their groups), calls and paid calls, and refusals only when there are any', () => {
    const plan = judgeBatchPlan('judge', [
      { kind: 'jury', rubric: 'r-org', seats: [paid('claude'), paid('claude')] },
      { kind: 'no_jury', reason: 'private_no_jury' },
      { kind: 'refused' },
    ]);
    expect(planLines(plan, 'proposal')).toEqual([
      'judge: 3 proposals (1 r-org, 1 no jury (private_no_jury))',
      '  2 model calls, 2 to paid providers (claude); answers already cached are not paid again',
      '  1 would be refused',
    ]);
    expect(planLines(singleCallPlan('transform', 1, free('ollama')), 'record')).toEqual([
      'transform: 1 record',
      '  1 model call, 0 to paid providers; answers already cached are not paid again',
    ]);
  });
});

describe("the judge stage's plan over stored proposals", () => {
  let t: TestEngine;
  let stage: JudgeStageDef;
  beforeEach(async () => {
    t = await testEngine();
    stage = t.pipeline.stages.find((candidate) => candidate.kind === 'judge') as JudgeStageDef;
  });

  async function proposal(visibility?: string): Promise<string> {
    const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
    if (visibility === undefined) return created.id;
    const outcome = await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility }, 'cli');
    if (outcome.kind !== 'committed') throw new Error(JSON.stringify(outcome));
    return created.id;
  }

  /** Every judge a paid model, except those named deterministic. */
  function providers(deterministic: string[] = []): { get(name: string): Provider } {
    return {
      get: (name) => ({
        name,
        kind: 'command',
        paid: !deterministic.includes(name),
        model: 'm',
        deterministic: deterministic.includes(name),
        call: () => Promise.reject(new Error('a plan calls nothing')),
      }),
    };
  }

  it("groups by the rubric the proposal's visibility chooses, asks each seat's provider, and refuses what is not judgeable", async () => {
    // judged already: it keeps its visibility, but is no longer in the stage's `from` state
    const judged = await proposal('org');
    const verdict = await judgeWithProviders(t.engine, stage, await storedOf(t.store, judged), {
      providers: new Providers(t.pipeline, { env: {}, now: () => t.engine.now(), concurrency: 2 }),
      useCache: false,
      actor: 'run',
    });
    expect(verdict.outcome.kind).toBe('committed');
    const ids = [await proposal('private'), await proposal('org'), await proposal('public'), await proposal('public'), await proposal(), judged];
    const run = judgeRun(t.engine, stage, providers());
    const plan = await run.plan(ids, {} as RunOptions);
    expect(plan).toEqual({
      stage: 'judge',
      items: 6,
      groups: { 'no jury (private_no_jury)': 1, 'lesson-promotion': 1, 'lesson-promotion-public': 2 },
      calls: 6,
      paidCalls: 6,
      paidProviders: ['standard-checks', 'adversarial-checks'],
      refused: 2,
    });
    // seats filled by deterministic providers cost nothing
    const partly = await judgeRun(t.engine, stage, providers(['adversarial-checks'])).plan(ids, {} as RunOptions);
    expect(partly).toMatchObject({ calls: 3, paidCalls: 3, paidProviders: ['standard-checks'] });
  });

  it('is asked for before a batch only when a judge is paid, or on a dry run', () => {
    expect(judgeRun(t.engine, stage, providers()).mustPlan({ dryRun: false } as RunOptions)).toBe(true);
    const none = judgeRun(t.engine, stage, providers(['standard-checks', 'adversarial-checks']));
    expect(none.mustPlan({ dryRun: false } as RunOptions)).toBe(false);
    expect(none.mustPlan({ dryRun: true } as RunOptions)).toBe(true);
  });
});
