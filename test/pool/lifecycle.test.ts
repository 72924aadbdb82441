/**
 * SPEC §5.8 in the shipped machine, through the pure decision: outcome counters (absent = 0,
 * never below 0), last_outcome_at, the entry moves of archive and restore, and refusals naming
 * the status — a YAML change only, decided by the generic engine.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Pipeline } from '../../engine/config/load.js';
import { decide, type Decision } from '../../engine/lifecycle/decide.js';
import type { Proposal } from '../../engine/lifecycle/effects.js';
import { shippedPipeline } from '../helpers.js';

let pipeline: Pipeline;
beforeAll(async () => {
  pipeline = await shippedPipeline();
});

const approved = (): Proposal => ({ id: 'P', status: 'approved', promoted_at: '2026-11-01T00:00:00Z' });
const step = (proposal: Proposal, event: string, args: Record<string, unknown> = {}): Decision =>
  decide(pipeline.lifecycle, { proposal, event, args, now: '2026-11-02T00:00:00Z', label: 'P', ensure: () => [] });

describe('the pool events of the shipped machine', () => {
  it('counts an outcome from absent counters, stamps last_outcome_at and stays approved', () => {
    const decision = step(approved(), 'record_outcome', { result: 'miss', consumer: 'x' });
    expect(decision).toMatchObject({ kind: 'commit', from: 'approved', to: 'approved', moves: [] });
    expect(decision.kind === 'commit' && decision.proposal).toEqual({ ...approved(), miss_count: 1, last_outcome_at: '2026-11-02T00:00:00Z' });
    expect(decision.kind === 'commit' && decision.transition.recordArgs).toEqual(['result', 'consumer', 'session']);
  });

  it('refuses an undo at zero and an unknown result, naming the status', () => {
    const noHit = 'P (approved): there is no hit to take back (hit_count is 0)';
    const noMiss = 'P (approved): there is no miss to take back (miss_count is 0)';
    expect(step(approved(), 'undo_outcome', { result: 'hit' })).toMatchObject({ kind: 'refused', message: noHit });
    expect(step({ ...approved(), hit_count: 2 }, 'undo_outcome', { result: 'miss' })).toMatchObject({ kind: 'refused', message: noMiss });
    expect(step(approved(), 'record_outcome', { result: 'maybe' })).toMatchObject({ kind: 'refused', message: 'P (approved): the result must be hit or miss' });
    expect(step(approved(), 'record_outcome', {})).toMatchObject({ kind: 'refused', message: 'P (approved): the result must be hit or miss' });
  });

  it('moves the entry out of approved on archive and back on restore; nothing else accepts them', () => {
    const archived = step(approved(), 'archive');
    expect(archived).toMatchObject({ kind: 'commit', to: 'archived', moves: [{ from: 'approved', to: 'archived' }] });
    const proposal = archived.kind === 'commit' ? archived.proposal : {};
    expect(step(proposal, 'restore')).toMatchObject({ kind: 'commit', to: 'approved', moves: [{ from: 'archived', to: 'approved' }] });
    expect(step(proposal, 'archive')).toMatchObject({ kind: 'refused', message: 'P is archived; archive applies only to approved proposals' });
    const notApproved = (status: string) => `P is ${status}; record_outcome applies only to approved proposals`;
    expect(step(proposal, 'record_outcome', { result: 'hit' })).toMatchObject({ kind: 'refused', message: notApproved('archived') });
    expect(step(approved(), 'restore')).toMatchObject({ kind: 'refused', message: 'P is approved; restore applies only to archived proposals' });
    for (const status of ['pending', 'confirmed', 'passed', 'rejected']) {
      expect(step({ id: 'P', status }, 'record_outcome', { result: 'hit' })).toMatchObject({ kind: 'refused', message: notApproved(status) });
    }
  });

  it('keeps counters exact and never negative over any sequence of outcomes and undos', () => {
    const event = fc.record({ undo: fc.boolean(), result: fc.constantFrom('hit', 'miss') });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        let proposal = approved();
        const model = { hit: 0, miss: 0 };
        for (const { undo, result } of events) {
          const decision = step(proposal, undo ? 'undo_outcome' : 'record_outcome', { result });
          const allowed = !undo || model[result] > 0;
          if ((decision.kind === 'commit') !== allowed) return false;
          if (decision.kind === 'commit') {
            proposal = decision.proposal;
            model[result] += undo ? -1 : 1;
          }
        }
        return (proposal['hit_count'] ?? 0) === model.hit && (proposal['miss_count'] ?? 0) === model.miss && proposal['status'] === 'approved';
      }),
      { numRuns: 300 },
    );
  });
});
