/** The pure replay (engine/jury/rescore.ts): recorded panels decided again under an edited rubric. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rubric } from '../../engine/config/types.js';
import { collectRecorded, replayRubric, type Recorded, type RecordedInput } from '../../engine/jury/rescore.js';

/** The shipped judge stage's outcomes: a pass leads to approved, a fail to rejected. */
const NAMES = { pass: 'approved', fail: 'rejected' };
import { noJuryVerdict } from '../../engine/jury/gate.js';
import type { Verdict } from '../../engine/jury/verdict.js';
import { judge, ORG, panel, verdictOf } from './recorded.js';

let counter = 0;
const nextId = () => `01JC${String(++counter).padStart(22, '0')}`;

/** Proposals judged under `rubric`, as the store would hold them. */
function recordedUnder(rubric: Rubric, panels: Verdict[][]): { input: RecordedInput; ids: string[] } {
  const proposals = panels.map((judges) => {
    const verdict = verdictOf(rubric, judges);
    return { id: nextId(), status: verdict.passed ? 'approved' : 'rejected', verdict };
  });
  return { input: { proposals, verdictField: 'verdict', present: new Set(proposals.map((p) => p.id)), ledgerRows: [] }, ids: proposals.map((p) => p.id) };
}

const withFloor = (name: string, min_pass: number): Rubric => ({ ...ORG, criteria: ORG.criteria.map((c) => (c.name === name ? { ...c, min_pass } : c)) });

describe('rescore replay', () => {
  it('raising a floor flips exactly the approved proposals whose lowest judge score falls below it', () => {
    const lowest = [0.7, 0.79, 0.8, 0.85, 0.95];
    const panels = lowest.map((low) => [
      judge('standard', { grounding: 0.9, scope_accuracy: 0.9, generality: 0.95 }),
      judge('adversarial', { grounding: 0.9, scope_accuracy: 0.9, generality: low }),
    ]);
    const { input, ids } = recordedUnder(ORG, panels);
    const replay = replayRubric(withFloor('generality', 0.8), collectRecorded(input), NAMES);
    expect(replay.considered).toBe(5);
    // 0.8 itself reaches the floor (the gate's 1e-9 tolerance): only 0.7 and 0.79 fall below.
    expect(replay.flips['approved_to_rejected']!.map((flip) => flip.id)).toEqual([ids[0], ids[1]]);
    expect(replay.flips['approved_to_rejected']![0]).toMatchObject({
      from: 'approved',
      to: 'rejected',
      old_reason: 'gate_passed',
      new_reason: 'criterion_floor',
      new_failed_criterion: 'generality',
      old_failed_criterion: null,
    });
    expect(replay.stay).toBe(3);
    expect(replay.counts).toEqual({ approved_to_rejected: 2, rejected_to_approved: 0, judged_to_unjudged: 0 });
  });

  it('raising a floor: the flipped set is exactly {lowest < floor} for any recorded approvals (property)', () => {
    const score = fc.double({ min: 0.7, max: 1, noNaN: true });
    fc.assert(
      fc.property(fc.array(fc.tuple(score, score), { minLength: 1, maxLength: 12 }), fc.double({ min: 0.6, max: 1, noNaN: true }), (pairs, floor) => {
        const panels = pairs.map(([a, b]) => [
          judge('standard', { grounding: 0.95, scope_accuracy: 0.95, generality: a }),
          judge('adversarial', { grounding: 0.95, scope_accuracy: 0.95, generality: b }),
        ]);
        const { input, ids } = recordedUnder(ORG, panels);
        const replay = replayRubric(withFloor('generality', floor), collectRecorded(input), NAMES);
        const expected = ids.filter((_, i) => Math.min(...pairs[i]!) < floor - 1e-9);
        expect(replay.flips['approved_to_rejected']!.map((flip) => flip.id)).toEqual(expected);
        expect(replay.stay).toBe(ids.length - expected.length);
      }),
    );
  });

  it('replaying under the recorded rubric changes nothing (the same gate code decides)', () => {
    const score = fc.double({ min: 0, max: 1, noNaN: true });
    const seat = (type: string) =>
      fc
        .record({ g: score, s: score, ge: score, passed: fc.boolean() })
        .map((v) => judge(type, { grounding: v.g, scope_accuracy: v.s, generality: v.ge }, v.passed));
    fc.assert(
      fc.property(fc.array(fc.tuple(seat('standard'), seat('adversarial')), { minLength: 1, maxLength: 10 }), (panels) => {
        const replay = replayRubric(ORG, collectRecorded(recordedUnder(ORG, panels).input), NAMES);
        expect(replay.stay).toBe(panels.length);
      }),
    );
  });

  it('changing weights moves aggregates as computed by hand', () => {
    const { input, ids } = recordedUnder(ORG, [panel(0.95, 0.75, 0.65), panel(0.7, 0.7, 0.9)]);
    const reweighted: Rubric = {
      ...ORG,
      criteria: [
        { name: 'grounding', weight: 0.2, min_pass: 0.7 },
        { name: 'scope_accuracy', weight: 0.3, min_pass: 0.7 },
        { name: 'generality', weight: 0.5, min_pass: 0.6 },
      ],
    };
    const replay = replayRubric(reweighted, collectRecorded(input), NAMES);
    // 0.45·0.95 + 0.35·0.75 + 0.20·0.65 = 0.82  →  0.2·0.95 + 0.3·0.75 + 0.5·0.65 = 0.74 (below 0.75)
    const [down] = replay.flips['approved_to_rejected']!;
    expect(down).toMatchObject({ id: ids[0], old_reason: 'gate_passed', new_reason: 'below_threshold' });
    expect(down!.old_aggregate).toBeCloseTo(0.82, 12);
    expect(down!.new_aggregate).toBeCloseTo(0.74, 12);
    // 0.45·0.7 + 0.35·0.7 + 0.20·0.9 = 0.74  →  0.2·0.7 + 0.3·0.7 + 0.5·0.9 = 0.80
    const [up] = replay.flips['rejected_to_approved']!;
    expect(up).toMatchObject({ id: ids[1], old_reason: 'below_threshold', new_reason: 'gate_passed' });
    expect(up!.old_aggregate).toBeCloseTo(0.74, 12);
    expect(up!.new_aggregate).toBeCloseTo(0.8, 12);
  });

  it('ignores a removed criterion that verdicts scored', () => {
    // Rejected only because generality (0.3) missed its floor; without that criterion it passes.
    const { input, ids } = recordedUnder(ORG, [panel(1, 0.9, 0.3), panel(0.9, 0.9, 0.9)]);
    const removed: Rubric = {
      ...ORG,
      criteria: [
        { name: 'grounding', weight: 0.55, min_pass: 0.7 },
        { name: 'scope_accuracy', weight: 0.45, min_pass: 0.7 },
      ],
    };
    const replay = replayRubric(removed, collectRecorded(input), NAMES);
    expect(replay.flips['rejected_to_approved']!).toHaveLength(1);
    expect(replay.flips['rejected_to_approved']![0]).toMatchObject({
      id: ids[0],
      old_reason: 'criterion_floor',
      old_failed_criterion: 'generality',
      new_reason: 'gate_passed',
      new_failed_criterion: null,
    });
    expect(replay.flips['rejected_to_approved']![0]!.new_aggregate).toBeCloseTo(0.55 * 1 + 0.45 * 0.9, 12);
    expect(replay.counts.judged_to_unjudged).toBe(0);
    expect(replay.stay).toBe(1);
  });

  it('makes a proposal unjudged when a new floored criterion was scored by nobody, or the panel changed', () => {
    const { input, ids } = recordedUnder(ORG, [panel(0.9, 0.9, 0.9)]);
    const recorded = collectRecorded(input);
    const added: Rubric = {
      ...ORG,
      criteria: [...ORG.criteria.map((c) => ({ ...c, weight: c.weight - 0.05 })), { name: 'novelty', weight: 0.15, min_pass: 0.5 }],
    };
    expect(replayRubric(added, recorded, NAMES).flips['judged_to_unjudged']!).toEqual([
      expect.objectContaining({
        id: ids[0],
        from: 'approved',
        to: 'unjudged',
        new_reason: 'criterion novelty has a floor (0.5) but no judge scored it',
        new_aggregate: null,
      }),
    ]);
    const bigger: Rubric = { ...ORG, judge_types: ['standard', 'adversarial', 'adversarial'] };
    expect(replayRubric(bigger, recorded, NAMES).flips['judged_to_unjudged']![0]!.new_reason).toMatch(
      /^the panel \(standard, adversarial\) is not the rubric's/,
    );
  });

  it('uses a declined-ledger row only when the proposal file is gone, once per proposal', () => {
    const { input, ids } = recordedUnder(ORG, [panel(0.9, 0.9, 0.9)]);
    const gone = { id: nextId(), verdict: verdictOf(ORG, panel(0.9, 0.9, 0.3)) };
    // A row for a proposal whose file is still there carries a different panel: it must be ignored.
    const shadow = { id: ids[0], verdict: verdictOf(ORG, panel(0.9, 0.9, 0.3)) };
    const transformDecline = { id: undefined, verdict: undefined };
    const recorded = collectRecorded({ ...input, ledgerRows: [shadow, gone, gone, transformDecline] });
    expect(recorded.panels.map((p) => [p.id, p.source])).toEqual([
      [ids[0], 'proposal'],
      [gone.id, 'ledger'],
    ]);
    const removed: Rubric = {
      ...ORG,
      criteria: [
        { name: 'grounding', weight: 0.5, min_pass: 0.7 },
        { name: 'scope_accuracy', weight: 0.5, min_pass: 0.7 },
      ],
    };
    const replay = replayRubric(removed, recorded, NAMES);
    expect(replay.considered).toBe(2);
    expect(replay.flips['rejected_to_approved']!).toEqual([expect.objectContaining({ id: gone.id, source: 'ledger' })]);
  });

  it('counts no-jury proposals apart, and never replays them', () => {
    const { input } = recordedUnder(ORG, [panel(0.9, 0.9, 0.9)]);
    const noJury = { id: nextId(), status: 'approved', verdict: noJuryVerdict('private_no_jury') };
    const pending = { id: nextId(), status: 'pending' };
    const recorded: Recorded = collectRecorded({ ...input, proposals: [...input.proposals, noJury, pending] });
    const harsh: Rubric = { ...ORG, score_threshold: 1 };
    const replay = replayRubric(harsh, recorded, NAMES);
    expect(replay).toMatchObject({ considered: 1, no_jury: 1, stay: 0, counts: { approved_to_rejected: 1 } });
  });

  it('reports no panels for a rubric id nobody was judged under, and counts the others', () => {
    const { input } = recordedUnder(ORG, [panel(0.9, 0.9, 0.9)]);
    const replay = replayRubric({ ...ORG, id: 'renamed' }, collectRecorded(input), NAMES);
    expect(replay).toMatchObject({ rubric_id: 'renamed', considered: 0, stay: 0, other_rubrics: 1 });
  });

  it('skips a recorded verdict that is not a verdict, naming it', () => {
    const broken = { id: nextId(), status: 'rejected', verdict: { rubric_id: 'lesson-promotion', passed: false, reason: 'below_threshold', judges: 'lost' } };
    const recorded = collectRecorded({ proposals: [broken], verdictField: 'verdict', present: new Set([broken.id]), ledgerRows: [] });
    expect(recorded).toEqual({ panels: [], noJury: 0, unreadable: [broken.id] });
  });

  it('leaves a proposal unjudged when a recorded judge verdict is unusable under the edited rubric', () => {
    const { input, ids } = recordedUnder(ORG, [panel(0.9, 0.9, 0.9)]);
    const tampered = {
      ...input.proposals[0]!,
      verdict: {
        ...(input.proposals[0]!['verdict'] as object),
        judges: [{ ...judge('standard', { grounding: 0.9 }), criterion_scores: { grounding: 1.5 } }, judge('adversarial', { grounding: 0.9 })],
      },
    };
    const replay = replayRubric(ORG, collectRecorded({ ...input, proposals: [tampered] }), NAMES);
    expect(replay.flips['judged_to_unjudged']!).toEqual([
      expect.objectContaining({ id: ids[0], new_reason: 'the standard verdict: the grounding score 1.5 is outside [0, 1]' }),
    ]);
  });
});
