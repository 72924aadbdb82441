/**
 * SPEC §5.4 jury math as pure functions: panel, coverage, aggregate, gate order, reasons and
 * failed_criterion — plus the property that the verdict does not depend on the judges' order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rubric } from '../../engine/config/types.js';
import { aggregate, decideJury } from '../../engine/jury/gate.js';
import { checkVerdict, type Verdict } from '../../engine/jury/verdict.js';
import { ORG_RUBRIC, PUBLIC_RUBRIC } from '../fixtures/rubrics.js';

const org = ORG_RUBRIC;
const pub = PUBLIC_RUBRIC;

const usage = { tokens_in: null, tokens_out: null };
function judge(judge_type: string, passed: boolean, scores: Record<string, number>, score = 0.9): Verdict {
  return { judge_type, score, passed, criterion_scores: scores, usage };
}
const good = { grounding: 0.9, scope_accuracy: 0.85, generality: 0.8 };
const goodPublic = { ...good, disclosure: 0.95 };

describe('panel and coverage', () => {
  it('is unjudged when the panel is empty', () => {
    expect(decideJury(org, [])).toEqual({ ok: false, reason: 'the panel is empty' });
  });

  it('is unjudged with one judge, three judges or two of one type', () => {
    for (const judges of [
      [judge('standard', true, good)],
      [judge('standard', true, good), judge('adversarial', true, good), judge('standard', true, good)],
      [judge('standard', true, good), judge('standard', true, good)],
    ]) {
      const decision = decideJury(org, judges);
      expect(decision.ok).toBe(false);
      expect(!decision.ok && decision.reason).toMatch(/is not the rubric's/);
    }
  });

  it('is unjudged when a floored criterion was scored by no judge', () => {
    const decision = decideJury(pub, [judge('standard', true, good), judge('adversarial', true, good)]);
    expect(decision).toEqual({ ok: false, reason: 'criterion disclosure has a floor (0.9) but no judge scored it' });
  });

  it('is unjudged when the scored weight is below the minimum coverage', () => {
    const rubric: Rubric = { ...org, criteria: org.criteria.map(({ name, weight }) => ({ name, weight })), min_criterion_coverage: 0.6 };
    const decision = decideJury(rubric, [judge('standard', true, { grounding: 0.9 }), judge('adversarial', true, { grounding: 0.9 })]);
    expect(!decision.ok && decision.reason).toMatch(/below the minimum coverage 0.6/);
  });

  it('counts a criterion as covered when any one judge scored it', () => {
    const decision = decideJury(org, [judge('standard', true, good), judge('adversarial', true, { grounding: 0.8 })]);
    expect(decision.ok).toBe(true);
  });
});

describe('aggregate', () => {
  it('is the weighted mean of per-criterion means, unrounded', () => {
    const judges = [
      judge('standard', true, { grounding: 0.9, scope_accuracy: 0.8, generality: 0.7 }),
      judge('adversarial', true, { grounding: 0.7, scope_accuracy: 0.6, generality: 0.9 }),
    ];
    // grounding 0.8, scope 0.7, generality 0.8 → 0.45·0.8 + 0.35·0.7 + 0.2·0.8 = 0.765
    expect(aggregate(org, judges)).toBeCloseTo(0.765, 12);
  });

  it('weights only the scored criteria (Σ w·m / Σ w)', () => {
    const rubric: Rubric = { ...org, criteria: org.criteria.map(({ name, weight }) => ({ name, weight })), min_criterion_coverage: 0 };
    const judges = [judge('standard', true, { grounding: 0.8, scope_accuracy: 0.6 }), judge('adversarial', true, { grounding: 0.8, scope_accuracy: 0.6 })];
    expect(aggregate(rubric, judges)).toBeCloseTo((0.45 * 0.8 + 0.35 * 0.6) / 0.8, 12);
  });

  it('falls back to the plain mean of score only when nothing was scored per criterion', () => {
    const rubric: Rubric = { ...org, criteria: org.criteria.map(({ name, weight }) => ({ name, weight })), min_criterion_coverage: 0 };
    const decision = decideJury(rubric, [judge('standard', true, {}, 0.9), judge('adversarial', true, {}, 0.8)]);
    expect(decision.ok && decision.verdict.aggregate_score).toBeCloseTo(0.85, 12);
  });
});

describe('gate', () => {
  it('passes a clean panel with gate_passed and no failed_criterion key', () => {
    const decision = decideJury(org, [judge('standard', true, good), judge('adversarial', true, good)]);
    expect(decision.ok && decision.verdict).toMatchObject({
      passed: true,
      reason: 'gate_passed',
      rubric_id: 'lesson-promotion',
      gate_policy: 'majority',
      score_threshold: 0.75,
    });
    expect(decision.ok && Object.keys(decision.verdict)).toEqual([
      'rubric_id',
      'gate_policy',
      'score_threshold',
      'aggregate_score',
      'passed',
      'reason',
      'judges',
    ]);
  });

  it('rejects a split panel with jury_not_majority even when the aggregate clears the threshold', () => {
    const decision = decideJury(org, [judge('standard', true, good), judge('adversarial', false, good)]);
    expect(decision.ok && decision.verdict).toMatchObject({ passed: false, reason: 'jury_not_majority' });
    expect(decision.ok && decision.verdict).not.toHaveProperty('failed_criterion');
  });

  it('separates majority from unanimous at three judges', () => {
    const three = { ...org, judge_types: ['standard', 'adversarial', 'standard'] };
    const judges = [judge('standard', true, good), judge('adversarial', true, good), judge('standard', false, good)];
    expect(decideJury(three, judges)).toMatchObject({ ok: true, verdict: { passed: true, reason: 'gate_passed' } });
    expect(decideJury({ ...three, gate_policy: 'unanimous' }, judges)).toMatchObject({ ok: true, verdict: { passed: false, reason: 'jury_not_unanimous' } });
  });

  it('rejects below the threshold with below_threshold', () => {
    const low = { grounding: 0.72, scope_accuracy: 0.71, generality: 0.65 };
    expect(decideJury(org, [judge('standard', true, low), judge('adversarial', true, low)])).toMatchObject({
      ok: true,
      verdict: { passed: false, reason: 'below_threshold' },
    });
  });

  it('rejects a public proposal with disclosure 0.4 for criterion_floor, failed_criterion disclosure', () => {
    const decision = decideJury(pub, [
      judge('standard', true, { ...goodPublic, grounding: 1, scope_accuracy: 1, generality: 1, disclosure: 1 }),
      judge('adversarial', true, { grounding: 1, scope_accuracy: 1, generality: 1, disclosure: 0.4 }),
    ]);
    expect(decision.ok && decision.verdict).toMatchObject({ passed: false, reason: 'criterion_floor', failed_criterion: 'disclosure' });
  });

  it('uses the lowest judge score for a floor, not the mean', () => {
    // disclosure mean 0.925 clears 0.9; the lowest (0.88) does not
    const decision = decideJury(pub, [
      judge('standard', true, { ...goodPublic, disclosure: 0.97 }),
      judge('adversarial', true, { ...goodPublic, disclosure: 0.88 }),
    ]);
    expect(decision.ok && decision.verdict).toMatchObject({ passed: false, reason: 'criterion_floor', failed_criterion: 'disclosure' });
  });

  it('names the first failing criterion in rubric order', () => {
    const decision = decideJury(pub, [
      judge('standard', true, { grounding: 0.95, scope_accuracy: 0.95, generality: 0.5, disclosure: 0.5 }),
      judge('adversarial', true, { grounding: 0.95, scope_accuracy: 0.95, generality: 0.95, disclosure: 0.95 }),
    ]);
    expect(decision.ok && decision.verdict.failed_criterion).toBe('generality');
  });

  it('checks the policy before the threshold before the floors, and carries failed_criterion on any blocking reason', () => {
    const bad = { grounding: 0.5, scope_accuracy: 0.5, generality: 0.5 };
    const decision = decideJury(org, [judge('standard', false, bad), judge('adversarial', false, bad)]);
    expect(decision.ok && decision.verdict).toMatchObject({ reason: 'jury_not_majority', failed_criterion: 'grounding' });
    const below = decideJury(org, [judge('standard', true, bad), judge('adversarial', true, bad)]);
    expect(below.ok && below.verdict).toMatchObject({ reason: 'below_threshold', failed_criterion: 'grounding' });
  });

  it('compares with a 1e-9 tolerance', () => {
    const edge = { grounding: 0.7, scope_accuracy: 0.7, generality: 0.6 };
    const rubric = { ...org, score_threshold: 0.45 * 0.7 + 0.35 * 0.7 + 0.2 * 0.6 + 5e-10 };
    expect(decideJury(rubric, [judge('standard', true, edge), judge('adversarial', true, edge)])).toMatchObject({ ok: true, verdict: { passed: true } });
  });
});

describe('verdicts are untrusted data', () => {
  it('keeps only the declared fields and the rubric criteria, and sets judge_type to the seat', () => {
    const checked = checkVerdict(
      {
        judge_type: 'god',
        score: 0.8,
        passed: true,
        criterion_scores: { grounding: 0.9, charm: 1 },
        status: 'approved',
        verdict: { passed: true },
        feedback_summary: 'ok',
        confidence: 0.7,
      },
      org,
      { seat: 'standard', usage },
    );
    expect(checked).toEqual({
      ok: true,
      verdict: { judge_type: 'standard', score: 0.8, passed: true, criterion_scores: { grounding: 0.9 }, feedback_summary: 'ok', confidence: 0.7, usage },
    });
  });

  it.each([
    ['not an object', 'yes'],
    ['an array', [1]],
    ['null', null],
    ['passed as a string', { score: 0.8, passed: 'true', criterion_scores: good }],
    ['score as a string', { score: '0.8', passed: true, criterion_scores: good }],
    ['score out of range ("30")', { score: 30, passed: true, criterion_scores: good }],
    ['a negative score', { score: -0.1, passed: true, criterion_scores: good }],
    ['a criterion score that is not a number', { score: 0.8, passed: true, criterion_scores: { ...good, grounding: 'high' } }],
    ['a criterion score above 1', { score: 0.8, passed: true, criterion_scores: { ...good, disclosure: 30 } }],
    ['criterion_scores as a list', { score: 0.8, passed: true, criterion_scores: [0.9] }],
    ['NaN', { score: Number.NaN, passed: true, criterion_scores: good }],
  ])('makes the verdict unusable when it is %s', (_name, raw) => {
    expect(checkVerdict(raw, pub, { seat: 'standard', usage }).ok).toBe(false);
  });
});

describe('properties', () => {
  const score = fc.double({ min: 0, max: 1, noNaN: true });
  const verdictFor = (judge_type: string) =>
    fc
      .record({ passed: fc.boolean(), score, g: score, s: score, q: score, d: score })
      .map(({ passed, score: overall, g, s, q, d }) => judge(judge_type, passed, { grounding: g, scope_accuracy: s, generality: q, disclosure: d }, overall));

  it('decides the same whatever the order of the judges', () => {
    const three: Rubric = { ...pub, judge_types: ['standard', 'adversarial', 'standard'] };
    fc.assert(
      fc.property(
        fc.tuple(verdictFor('standard'), verdictFor('adversarial'), verdictFor('standard')),
        fc.constantFrom<Rubric['gate_policy']>('majority', 'unanimous'),
        (judges, policy) => {
          const rubric = { ...three, gate_policy: policy };
          const first = decideJury(rubric, judges);
          for (const order of [
            [1, 0, 2],
            [2, 1, 0],
            [0, 2, 1],
          ]) {
            const other = decideJury(
              rubric,
              order.map((index) => judges[index]!),
            );
            if (!first.ok || !other.ok) return first.ok === other.ok;
            expect(other.verdict.passed).toBe(first.verdict.passed);
            expect(other.verdict.reason).toBe(first.verdict.reason);
            expect(other.verdict.failed_criterion).toBe(first.verdict.failed_criterion);
            expect(other.verdict.aggregate_score).toBeCloseTo(first.verdict.aggregate_score!, 12);
          }
          return true;
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never passes a panel whose lowest floored score misses its floor', () => {
    fc.assert(
      fc.property(verdictFor('standard'), verdictFor('adversarial'), (a, b) => {
        const decision = decideJury(pub, [a, b]);
        if (!decision.ok || !decision.verdict.passed) return true;
        return pub.criteria.every(
          (criterion) => Math.min(a.criterion_scores[criterion.name]!, b.criterion_scores[criterion.name]!) >= criterion.min_pass! - 1e-9,
        );
      }),
      { numRuns: 500 },
    );
  });
});
