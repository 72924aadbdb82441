/**
 * The one batch driver (engine/runner/driver.ts).
 *
 * A run's selection decides whether it claims at all: with nothing in its state it makes no claim
 * — on a large store a claim's first listing is a second pass over every proposal — and its
 * summary is what the selection counted; with work, it claims it.
 *
 * The claim window: up to 2 × concurrency units in a slot or waiting for one. Units past their slot
 * — their commit still waiting for the event loop — do not hold back the next claim, up to another
 * concurrency of them: slow commits never leave the slots idle, and a run never holds more than
 * 3 × concurrency units at once.
 *
 * The commit phase: a unit's commit starts only after the unit that took its slot has sent its
 * requests (node:http writes them on process.nextTick) — at C = 1 and L = 100 ms that took
 * 1.10–1.11 × ideal down to 1.08.
 */
import { describe, expect, it, vi } from 'vitest';
import { runBatch, type StageRun } from '../../engine/runner/driver.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { runStage } from '../../engine/stages/index.js';
import { proposalInput, quietRun, testEngine } from '../helpers.js';

/** A stage kind over plain records whose work is `work` (no plan, one outcome: done). */
function recordsKind(items: readonly string[], work: StageRun<string>['work']): StageRun<string> {
  return {
    outcomes: () => ['done'],
    noun: 'record',
    retryLabel: 'left',
    select: async () => ({ units: { items, keyOf: (item) => item }, total: items.length }),
    mustPlan: () => false,
    plan: async () => {
      throw new Error('no plan is asked for');
    },
    work,
  };
}

describe('a run with nothing selected', () => {
  it('makes no claim, and makes claims once there is work', async () => {
    const t = await testEngine();
    const judge = t.pipeline.stages.find((stage) => stage.kind === 'judge')!;
    const claim = vi.spyOn(t.engine.store, 'claim');

    const idle = await runStage(t.engine, judge, quietRun());
    expect(claim).not.toHaveBeenCalled();
    expect(Object.values(idle.counts).every((n) => n === 0)).toBe(true);

    const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
    const confirmed = await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility: 'private' }, 'cli');
    expect(confirmed.kind).toBe('committed');
    const busy = await runStage(t.engine, judge, quietRun());
    expect(claim).toHaveBeenCalled();
    expect(Object.values(busy.counts).reduce((a, b) => a + b, 0)).toBe(1);
  });
});

describe('the claim window', () => {
  it('keeps taking work while commits wait, up to 3 × concurrency units held', async () => {
    const t = await testEngine();
    const stage = t.pipeline.stages.find((each) => each.kind === 'judge')!;
    const concurrency = 2;
    const items = Array.from({ length: 20 }, (_, i) => `record-${String(i).padStart(2, '0')}`);
    let open!: () => void;
    const commits = new Promise<void>((resolve) => (open = resolve));
    let started = 0;
    let held = 0;
    let mostHeld = 0;
    const kind = recordsKind(items, async () => {
      started++;
      held++;
      mostHeld = Math.max(mostHeld, held);
      // The slot is handed on at once; the commit waits.
      return {
        finish: async () => {
          await commits;
          held--;
          return { outcome: 'done' };
        },
      };
    });
    const run = runBatch(t.engine, stage, kind, quietRun({ concurrency }));
    await vi.waitFor(() => expect(started).toBe(3 * concurrency));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toBe(3 * concurrency);
    open();
    const summary = await run;
    expect(summary.counts['done']).toBe(items.length);
    expect(mostHeld).toBe(3 * concurrency);
  });
});

describe('the commit phase', () => {
  it('starts after the next unit’s requests have gone out (process.nextTick), not before', async () => {
    const t = await testEngine();
    const stage = t.pipeline.stages.find((each) => each.kind === 'judge')!;
    const items = ['a', 'b', 'c'];
    const events: string[] = [];
    const kind = recordsKind(items, async (unit) => {
      events.push(`${unit} work`);
      // As node:http does: a request is written to its socket on process.nextTick, which runs
      // only once the pending promise jobs are done.
      process.nextTick(() => events.push(`${unit} request sent`));
      // The answer comes later, from the event loop.
      await new Promise((resolve) => setTimeout(resolve, 5));
      return {
        finish: async () => {
          events.push(`${unit} commit`);
          return { outcome: 'done' };
        },
      };
    });
    const summary = await runBatch(t.engine, stage, kind, quietRun({ concurrency: 1 }));
    expect(summary.counts['done']).toBe(3);
    expect(events.indexOf('b request sent')).toBeLessThan(events.indexOf('a commit'));
    expect(events.indexOf('c request sent')).toBeLessThan(events.indexOf('b commit'));
  });
});
