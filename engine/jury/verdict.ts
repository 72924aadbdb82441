/**
 * One judge's verdict, from untrusted data: parsed, validated, and reduced to the declared
 * fields (SPEC §5.4). Anything that would let a broken or hostile answer decide — a missing or
 * wrong-typed `passed`/`score`, a score outside [0, 1] — makes the verdict unusable, which makes
 * the proposal unjudged: never rejected.
 */
import type { Rubric } from '../config/types.js';

export interface Usage {
  tokens_in: number | null;
  tokens_out: number | null;
}

export interface Verdict {
  judge_type: string;
  score: number;
  passed: boolean;
  criterion_scores: Record<string, number>;
  feedback_summary?: string;
  confidence?: number;
  usage: Usage;
}

export type VerdictCheck = { ok: true; verdict: Verdict } | { ok: false; reason: string };

/** Long enough for any real summary; a hostile essay is cut here. */
export const MAX_FEEDBACK_CHARS = 4000;

/**
 * The fields of a verdict as `checkVerdict` reads them, described for people (`judge --help`),
 * beside the code that enforces them so the two cannot drift apart.
 */
export const VERDICT_FIELDS: readonly (readonly [field: string, rule: string])[] = [
  ['judge_type', "a seat of the rubric's panel; the array holds every seat, each once"],
  ['score', 'a number in [0, 1]'],
  ['passed', 'true or false'],
  ['criterion_scores', '{criterion: number in [0, 1]}; criteria the rubric does not name are dropped'],
  ['feedback_summary', `optional text (cut at ${MAX_FEEDBACK_CHARS} characters)`],
  ['confidence', 'optional, a number in [0, 1]'],
  ['usage', 'optional {tokens_in, tokens_out}: whole numbers, or null when unknown'],
];

const isScore = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const inRange = (value: number) => value >= 0 && value <= 1;

export function normalizeUsage(raw: unknown): Usage {
  const usage = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  return { tokens_in: tokenCount(usage['tokens_in']), tokens_out: tokenCount(usage['tokens_out']) };
}

/**
 * The most tokens one call is believed to have used: far past any model's window, and small enough
 * that a run's total of millions of calls stays an exact number (a count of 1e308 made it Infinity).
 */
export const TOKENS_MAX = 1_000_000_000;

/** A token count as an answer reports it: a whole number from 0 to TOKENS_MAX, else unknown (null) — never 0. */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= TOKENS_MAX ? value : null;
}

/**
 * Validate one raw verdict. `seat` is the judge type the engine called (it overrides whatever the
 * answer claims); without a seat (verdicts produced elsewhere) the verdict's own judge_type is used.
 */
export function checkVerdict(raw: unknown, rubric: Rubric, options: { seat?: string; usage?: Usage } = {}): VerdictCheck {
  const who = options.seat ? `the ${options.seat} judge` : 'a verdict';
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, reason: `${who} did not answer with a JSON object` };
  const verdict = raw as Record<string, unknown>;
  const judgeType = options.seat ?? verdict['judge_type'];
  if (typeof judgeType !== 'string' || judgeType === '') return { ok: false, reason: `${who} has no judge_type` };
  const name = options.seat ? who : `the ${judgeType} verdict`;
  if (typeof verdict['passed'] !== 'boolean') return { ok: false, reason: `${name}: passed is not true or false` };
  if (!isScore(verdict['score'])) return { ok: false, reason: `${name}: score is not a number` };
  if (!inRange(verdict['score'])) return { ok: false, reason: `${name}: score ${verdict['score']} is outside [0, 1]` };
  const rawScores = verdict['criterion_scores'] ?? {};
  if (rawScores === null || typeof rawScores !== 'object' || Array.isArray(rawScores)) return { ok: false, reason: `${name}: criterion_scores is not a map` };
  const criterionScores: Record<string, number> = {};
  for (const criterion of rubric.criteria) {
    if (!Object.hasOwn(rawScores, criterion.name)) continue;
    const value = (rawScores as Record<string, unknown>)[criterion.name];
    if (!isScore(value)) return { ok: false, reason: `${name}: the ${criterion.name} score is not a number` };
    if (!inRange(value)) return { ok: false, reason: `${name}: the ${criterion.name} score ${value} is outside [0, 1]` };
    criterionScores[criterion.name] = value;
  }
  const clean: Verdict = {
    judge_type: judgeType,
    score: verdict['score'],
    passed: verdict['passed'],
    criterion_scores: criterionScores,
    usage: options.usage ?? normalizeUsage(verdict['usage']),
  };
  if (typeof verdict['feedback_summary'] === 'string') clean.feedback_summary = verdict['feedback_summary'].slice(0, MAX_FEEDBACK_CHARS);
  if (isScore(verdict['confidence']) && inRange(verdict['confidence'])) clean.confidence = verdict['confidence'];
  // Key order of the stored verdict: the declared order, usage last.
  const { usage, ...rest } = clean;
  return { ok: true, verdict: { ...rest, usage } };
}
