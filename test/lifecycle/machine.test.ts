/**
 * SPEC §3 and §5.1: the statechart built from machines/lesson.yaml with xstate v5, exercised
 * through the pure transition(): every reachable state and event by xstate/graph paths, replayed
 * through the engine's decisions; and the property that no event sequence leaves the machine.
 */
import fc from 'fast-check';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Pipeline } from '../../engine/config/load.js';
import { decide } from '../../engine/lifecycle/decide.js';
import type { Proposal } from '../../engine/lifecycle/effects.js';
import { candidate, shippedPipeline } from '../helpers.js';

let pipeline: Pipeline;
beforeAll(async () => {
  pipeline = await shippedPipeline();
});

const verdict = (passed: boolean) => ({
  rubric_id: 'lesson-promotion',
  gate_policy: 'majority',
  score_threshold: 0.75,
  aggregate_score: passed ? 0.9 : 0.5,
  passed,
  reason: passed ? 'gate_passed' : 'below_threshold',
  judges: [],
});

/** An argument set for each event that satisfies its guards. */
const EVENTS = [
  { type: 'confirm', args: { visibility: 'org' } },
  { type: 'confirm', args: { visibility: 'public', version_independent: 'The rule is part of the protocol itself' } },
  { type: 'pass', args: { reason: 'not mine' } },
  { type: 'defer', args: {} },
  { type: 'unconfirm', args: {} },
  { type: 'unpass', args: {} },
  { type: 'approve', args: { verdict: verdict(true) } },
  { type: 'reject', args: { verdict: verdict(false) } },
  { type: 'record_outcome', args: { result: 'hit' } },
  { type: 'undo_outcome', args: { result: 'hit' } },
  { type: 'archive', args: {} },
  { type: 'restore', args: {} },
];

function pendingProposal(): Proposal {
  return {
    id: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    artifact_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    created_at: '2026-11-01T00:00:00Z',
    status: 'pending',
    candidate: candidate({}, '01ARZ3NDEKTSV4RRFFQ69G5FAV'),
  };
}

/** Replay events through the engine's pure decision: the proposal each commit produces. */
function replay(events: readonly { type: string; args: Record<string, unknown> }[]): { proposal: Proposal; statuses: string[] } {
  let proposal = pendingProposal();
  const statuses = ['pending'];
  for (const event of events) {
    const decision = decide(pipeline.lifecycle, {
      proposal,
      event: event.type,
      args: event.args,
      now: '2026-11-01T00:00:01Z',
      label: 'p',
      ensure: (schema, next) => pipeline.schemas.check(schema, next).map((finding) => finding.message),
    });
    if (decision.kind === 'commit') proposal = decision.proposal;
    statuses.push(String(proposal['status']));
  }
  return { proposal, statuses };
}

describe('the machine built from YAML', () => {
  it('has the states of §5.1 in order, pending initial, rejected terminal (passed can be taken back; approved ⇄ archived)', () => {
    const { lifecycle } = pipeline;
    expect(lifecycle.states).toEqual(['pending', 'confirmed', 'passed', 'approved', 'rejected', 'archived']);
    expect(lifecycle.initial).toBe('pending');
    expect([...lifecycle.terminal].sort()).toEqual(['rejected']);
    expect(lifecycle.machine.id).toBe('lesson');
    expect(lifecycle.events.sort()).toEqual([
      'approve',
      'archive',
      'confirm',
      'defer',
      'pass',
      'record_outcome',
      'reject',
      'restore',
      'unconfirm',
      'undo_outcome',
      'unpass',
    ]);
  });

  it('reaches every state by a shortest path of xstate/graph, and the engine agrees step by step', () => {
    const start = pipeline.lifecycle.machine.resolveState({ value: 'pending', context: { proposal: pendingProposal() } });
    const paths = getShortestPaths(pipeline.lifecycle.machine, { events: EVENTS as never, fromState: start as never });
    const reached = new Set(paths.map((path) => String(path.state.value)));
    expect([...reached].sort()).toEqual([...pipeline.lifecycle.states].sort());
    for (const path of paths) {
      const events = path.steps.slice(1).map((step) => step.event as unknown as { type: string; args: Record<string, unknown> });
      const { statuses } = replay(events);
      expect(statuses[statuses.length - 1]).toBe(String(path.state.value));
    }
  });

  it('walks every simple path from every non-terminal state with the engine, covering every event', () => {
    const eventsSeen = new Set<string>();
    for (const from of ['pending', 'confirmed']) {
      const proposal = replay(from === 'confirmed' ? [EVENTS[0]!] : []).proposal;
      const start = pipeline.lifecycle.machine.resolveState({ value: from, context: { proposal } });
      const paths = getSimplePaths(pipeline.lifecycle.machine, { events: EVENTS as never, fromState: start as never });
      expect(paths.length).toBeGreaterThan(3);
      for (const path of paths) {
        const events = path.steps.slice(1).map((step) => step.event as unknown as { type: string; args: Record<string, unknown> });
        for (const event of events) eventsSeen.add(event.type);
        const prefix = from === 'confirmed' ? [EVENTS[0]!] : [];
        expect(replay([...prefix, ...events]).statuses.at(-1)).toBe(String(path.state.value));
      }
    }
    expect([...eventsSeen].sort()).toEqual(['approve', 'archive', 'confirm', 'pass', 'reject', 'unconfirm']);
  });

  it('decides purely: the proposal given is not modified', () => {
    const proposal = pendingProposal();
    const before = JSON.stringify(proposal);
    const decision = decide(pipeline.lifecycle, {
      proposal,
      event: 'confirm',
      args: { visibility: 'org', version_independent: 'The rule is part of the protocol itself' },
      now: 'x',
      label: 'p',
      ensure: () => [],
    });
    expect(decision.kind).toBe('commit');
    expect(JSON.stringify(proposal)).toBe(before);
  });

  it('refuses an event the status does not accept, naming the status and where it applies', () => {
    const decision = decide(pipeline.lifecycle, {
      proposal: { ...pendingProposal(), status: 'passed' },
      event: 'approve',
      args: {},
      now: 'x',
      label: 'P1',
      ensure: () => [],
    });
    expect(decision).toEqual({ kind: 'refused', code: 'status', message: 'P1 is passed; approve applies only to confirmed proposals' });
  });

  it('refuses with the guard message when the guard fails', () => {
    const decision = decide(pipeline.lifecycle, {
      proposal: pendingProposal(),
      event: 'confirm',
      args: { visibility: 'private', version_independent: 'x' },
      now: 'x',
      label: 'P1',
      ensure: () => [],
    });
    expect(decision.kind === 'refused' && decision.message).toBe(
      'P1 (pending): a private proposal runs no jury, so it cannot be version_independent (confirm at org or public)',
    );
  });
});

describe('properties', () => {
  it('no event sequence reaches a status the machine does not declare, and terminal states stay put', () => {
    const states = new Set(pipeline.lifecycle.states);
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...EVENTS), { maxLength: 12 }), (events) => {
        const { statuses } = replay(events);
        for (let i = 0; i < statuses.length; i++) {
          if (!states.has(statuses[i]!)) return false;
          if (i > 0 && pipeline.lifecycle.terminal.has(statuses[i - 1]!) && statuses[i] !== statuses[i - 1]) return false;
        }
        return true;
      }),
      { numRuns: 500 },
    );
  });

  it('confirm then unconfirm always restores the proposal exactly', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('private', 'org', 'public'),
        fc.option(
          fc.string({ minLength: 1 }).filter((text) => /\S/.test(text)),
          { nil: undefined },
        ),
        (visibility, justification) => {
          if (visibility === 'private' && justification !== undefined) return true;
          const args = justification === undefined ? { visibility } : { visibility, version_independent: justification };
          const { proposal } = replay([
            { type: 'confirm', args },
            { type: 'unconfirm', args: {} },
          ]);
          return JSON.stringify(proposal) === JSON.stringify(pendingProposal());
        },
      ),
      { numRuns: 200 },
    );
  });
});
