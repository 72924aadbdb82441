/**
 * A run's selection decides whether it claims at all (engine/runner/driver.ts): with nothing in
 * its state it makes no claim — on a large store a claim's first listing is a second pass over
 * every proposal — and its summary is what the selection counted; with work, it claims it.
 */
import { describe, expect, it, vi } from 'vitest';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { runStage } from '../../engine/stages/index.js';
import { proposalInput, quietRun, testEngine } from '../helpers.js';

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
