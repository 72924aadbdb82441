/**
 * SPEC §6 and §7: Ctrl-C is honoured promptly even while the offline jury is busy on large
 * adversarial text (the CPU-bound case: no provider call to wait on, only pattern scans). The run
 * stops claiming, lets what it is committing finish, exits 130, and leaves every proposal either
 * judged once or still confirmed for the next run — which then judges the rest exactly once.
 */
import { describe, expect, it } from 'vitest';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { adversarialText, proposalInput, testEngine } from '../helpers.js';
import { auditById, readProposals, run, sleep, start, storeEnv, verdictRows } from './harness.js';

// More than a run holds at once (6 × concurrency), so that stopping early shows.
const COUNT = 60;
const CONCURRENCY = 4;

describe('Ctrl-C during heavy offline judging', () => {
  it('exits 130 long before the run would end, and the next run judges the rest exactly once', async () => {
    const t = await testEngine();
    const confirm = findReviewCommand(t.pipeline, 'confirm')!;
    const text = adversarialText(300_000);
    for (let i = 0; i < COUNT; i++) {
      // Past the cap `propose` holds text to: as a proposal written by hand, or copied in, could be.
      const input = proposalInput({ rationale: `The lockfile format changed in pnpm 8. ${text}` });
      const created = await t.engine.create(input.artifact_id, input.candidate, { stage: 'test', actor: 'cli' });
      if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
      await runReviewCommand(t.engine, confirm, created.id, { visibility: 'public' }, 'cli');
    }
    const env = storeEnv(t.storeDir);
    const judged = () => [...auditById(t.storeDir).values()].filter((rows) => verdictRows(rows).length > 0).length;

    const { child, done } = start(['run', 'judge', '--yes', '--concurrency', String(CONCURRENCY)], env);
    while (judged() === 0) await sleep(50);
    const atSignal = judged();
    child.kill('SIGINT');
    const stopped = await done;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toMatch(/interrupted/);
    expect(stopped.stderr).not.toMatch(/internal error|at .*\.js:\d+/);
    const first = judged();
    // It stopped: what it finished after the signal is at most the units in hand then — the driver
    // holds up to 2 × concurrency + its commit depth (the file store's, capped: 4 × concurrency),
    // of which those still waiting for a slot are dropped — and what committed while the signal was
    // on its way: never the rest of the queue.
    const inHand = 2 * CONCURRENCY + 4 * CONCURRENCY;
    expect(first - atSignal).toBeLessThanOrEqual(inHand + CONCURRENCY); // and a slot's worth landing while the signal travelled
    expect(first).toBeLessThan(COUNT);
    for (const proposal of readProposals(t.storeDir).values()) expect(['confirmed', 'approved', 'rejected']).toContain(proposal['status']);

    const rest = await run(['run', 'judge', '--yes'], env);
    expect(rest.code, rest.stderr).toBe(0);
    for (const rows of auditById(t.storeDir).values()) expect(verdictRows(rows)).toHaveLength(1);
    expect(judged()).toBe(COUNT);
  }, 180_000);
});
