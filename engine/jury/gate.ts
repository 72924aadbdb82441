/**
 * The jury's decision, as pure functions (SPEC §5.4): panel check, coverage, aggregate, gate.
 * The judge stage and `pipeline rescore` share this code, so a replay decides exactly as a run.
 */
import type { Rubric } from '../config/types.js';
import type { Verdict } from './verdict.js';

export const TOLERANCE = 1e-9;

export interface JuryVerdict {
  rubric_id: string | null;
  gate_policy: string | null;
  score_threshold: number | null;
  aggregate_score: number | null;
  passed: boolean;
  reason: string;
  judges: Verdict[];
  failed_criterion?: string;
}

export type JuryDecision = { ok: true; verdict: JuryVerdict } | { ok: false; reason: string };

function multiset(values: readonly string[]): string {
  return [...values].sort().join('\u0000');
}

/** Unjudged unless the verdicts' judge types are exactly the rubric's panel (as a multiset). */
export function checkPanel(rubric: Rubric, judges: readonly Verdict[]): string | undefined {
  if (judges.length === 0) return 'the panel is empty';
  if (multiset(judges.map((judge) => judge.judge_type)) !== multiset(rubric.judge_types)) {
    return `the panel (${judges.map((judge) => judge.judge_type).join(', ')}) is not the rubric's (${rubric.judge_types.join(', ')})`;
  }
  return undefined;
}

/** Unjudged when a floored criterion was scored by no judge, or the scored weight is too small. */
export function checkCoverage(rubric: Rubric, judges: readonly Verdict[]): string | undefined {
  let scoredWeight = 0;
  for (const criterion of rubric.criteria) {
    const scored = judges.some((judge) => Object.hasOwn(judge.criterion_scores, criterion.name));
    if (scored) scoredWeight += criterion.weight;
    else if (criterion.min_pass !== undefined) return `criterion ${criterion.name} has a floor (${criterion.min_pass}) but no judge scored it`;
  }
  if (scoredWeight < rubric.min_criterion_coverage - TOLERANCE) {
    return `the judges scored criteria worth ${round(scoredWeight)} of the weight, below the minimum coverage ${rubric.min_criterion_coverage}`;
  }
  return undefined;
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/** Per criterion the mean of the judges' scores, then the weighted mean over scored criteria. */
export function aggregate(rubric: Rubric, judges: readonly Verdict[]): number {
  let weighted = 0;
  let weights = 0;
  for (const criterion of rubric.criteria) {
    const scores = judges.filter((judge) => Object.hasOwn(judge.criterion_scores, criterion.name)).map((judge) => judge.criterion_scores[criterion.name]!);
    if (scores.length === 0) continue;
    weighted += criterion.weight * (scores.reduce((sum, score) => sum + score, 0) / scores.length);
    weights += criterion.weight;
  }
  if (weights > 0) return weighted / weights;
  return judges.reduce((sum, judge) => sum + judge.score, 0) / judges.length;
}

/** The first floored criterion (rubric order) whose lowest judge score misses its floor. */
export function failedFloor(rubric: Rubric, judges: readonly Verdict[]): string | undefined {
  for (const criterion of rubric.criteria) {
    if (criterion.min_pass === undefined) continue;
    const scores = judges.filter((judge) => Object.hasOwn(judge.criterion_scores, criterion.name)).map((judge) => judge.criterion_scores[criterion.name]!);
    if (scores.length && Math.min(...scores) < criterion.min_pass - TOLERANCE) return criterion.name;
  }
  return undefined;
}

export function policyPasses(policy: Rubric['gate_policy'], judges: readonly Verdict[]): boolean {
  const passes = judges.filter((judge) => judge.passed).length;
  return policy === 'unanimous' ? passes === judges.length : passes * 2 > judges.length;
}

/** Panel → coverage → aggregate → gate (policy, threshold, floors). */
export function decideJury(rubric: Rubric, judges: readonly Verdict[]): JuryDecision {
  const panel = checkPanel(rubric, judges);
  if (panel) return { ok: false, reason: panel };
  const coverage = checkCoverage(rubric, judges);
  if (coverage) return { ok: false, reason: coverage };
  const score = aggregate(rubric, judges);
  const floor = failedFloor(rubric, judges);
  let reason = 'gate_passed';
  if (!policyPasses(rubric.gate_policy, judges)) reason = rubric.gate_policy === 'unanimous' ? 'jury_not_unanimous' : 'jury_not_majority';
  else if (score < rubric.score_threshold - TOLERANCE) reason = 'below_threshold';
  else if (floor) reason = 'criterion_floor';
  const passed = reason === 'gate_passed';
  return {
    ok: true,
    verdict: {
      rubric_id: rubric.id,
      gate_policy: rubric.gate_policy,
      score_threshold: rubric.score_threshold,
      aggregate_score: score,
      passed,
      reason,
      judges: [...judges],
      ...(!passed && floor ? { failed_criterion: floor } : {}),
    },
  };
}

/** The verdict of a tier that runs no jury. */
export function noJuryVerdict(reason: string): JuryVerdict {
  return { rubric_id: null, gate_policy: null, score_threshold: null, aggregate_score: null, passed: true, reason, judges: [] };
}
