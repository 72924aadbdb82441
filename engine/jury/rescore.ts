/**
 * Rubric tuning (SPEC §5.7): replay the panels a jury recorded under an edited rubric and say
 * which decisions would flip. Pure: it takes the recorded proposals and ledger rows as values and
 * decides with `decideJury`, the code the judge stage runs, so a replay cannot drift from a run.
 */
import type { Rubric } from '../config/types.js';
import { decideJury } from './gate.js';
import { isObject } from '../util/json-path.js';
import { checkVerdict, type Verdict } from './verdict.js';

/**
 * A jury outcome as recorded (`passed`), or as a replay would leave the proposal: the state a
 * pass or a fail leads to (named by the pipeline's judge stage), or `unjudged`.
 */
export type JuryOutcome = string;

/** The states a judge stage's pass and fail lead to (shipped: approved, rejected). */
export interface OutcomeNames {
  pass: string;
  fail: string;
}

/** One recorded jury decision: the panel as it was stored, and what the gate said then. */
export interface RecordedPanel {
  id: string;
  /** Where it was read: the proposal file, or a ledger row whose proposal file is gone. */
  source: 'proposal' | 'ledger';
  rubric_id: string;
  passed: boolean;
  reason: string;
  aggregate_score: number | null;
  failed_criterion: string | null;
  /** Raw, as stored: checked again against the edited rubric at replay. */
  judges: unknown[];
}

export interface Recorded {
  /** Jury panels under every rubric, sorted by id; one per proposal. */
  panels: RecordedPanel[];
  /** Proposals decided by a tier that runs no jury (`verdict.rubric_id` null). */
  noJury: number;
  /** Ids whose recorded verdict is not a verdict at all (hand-edited); never replayed. */
  unreadable: string[];
}

export interface RecordedInput {
  /** Every readable proposal (with its `id`). */
  proposals: readonly Record<string, unknown>[];
  /** The proposal field the judge stage records its verdict in. */
  verdictField: string;
  /** Ids that have a proposal file, readable or not: their ledger rows are never used. */
  present: ReadonlySet<string>;
  /** Rows of the ledgers the promote stage appends verdicts to, reduced to `{id, verdict}`. */
  ledgerRows: readonly { id: unknown; verdict: unknown }[];
}

export interface Flip {
  id: string;
  source: RecordedPanel['source'];
  from: JuryOutcome;
  to: JuryOutcome;
  old_reason: string;
  new_reason: string;
  old_aggregate: number | null;
  new_aggregate: number | null;
  old_failed_criterion: string | null;
  new_failed_criterion: string | null;
}

export interface Replay {
  rubric_id: string;
  /** Recorded panels under this rubric id that were replayed. */
  considered: number;
  stay: number;
  no_jury: number;
  /** Jury panels recorded under a different rubric id (a renamed id shows up here). */
  other_rubrics: number;
  /** `<pass>_to_<fail>`, `<fail>_to_<pass>` and `judged_to_unjudged` (shipped: approved_to_rejected, …). */
  flips: Record<string, Flip[]>;
  counts: Record<string, number>;
}

const numberOrNull = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

type Read = { kind: 'jury'; panel: Omit<RecordedPanel, 'id' | 'source'> } | { kind: 'no_jury' } | { kind: 'none' } | { kind: 'unreadable' };

/** What a stored `verdict` value is: a jury panel, a no-jury decision, nothing, or garbage. */
function readVerdict(verdict: unknown): Read {
  if (verdict === undefined) return { kind: 'none' };
  if (!isObject(verdict) || typeof verdict['passed'] !== 'boolean') return { kind: 'unreadable' };
  if (verdict['rubric_id'] === null) return { kind: 'no_jury' };
  if (typeof verdict['rubric_id'] !== 'string' || !Array.isArray(verdict['judges']) || typeof verdict['reason'] !== 'string') return { kind: 'unreadable' };
  return {
    kind: 'jury',
    panel: {
      rubric_id: verdict['rubric_id'],
      passed: verdict['passed'],
      reason: verdict['reason'],
      aggregate_score: numberOrNull(verdict['aggregate_score']),
      failed_criterion: typeof verdict['failed_criterion'] === 'string' ? verdict['failed_criterion'] : null,
      judges: verdict['judges'] as unknown[],
    },
  };
}

/**
 * One decision per proposal: its file's verdict; a ledger row's verdict only when the file is
 * gone (the row is a copy of the same decision, so using both would count it twice).
 */
export function collectRecorded(input: RecordedInput): Recorded {
  const panels: RecordedPanel[] = [];
  const unreadable: string[] = [];
  let noJury = 0;
  const take = (id: string, source: RecordedPanel['source'], verdict: unknown): void => {
    const read = readVerdict(verdict);
    if (read.kind === 'jury') panels.push({ id, source, ...read.panel });
    else if (read.kind === 'no_jury') noJury++;
    else if (read.kind === 'unreadable') unreadable.push(id);
  };
  for (const proposal of input.proposals) {
    if (typeof proposal['id'] === 'string') take(proposal['id'], 'proposal', proposal[input.verdictField]);
  }
  const seen = new Set<string>();
  for (const row of input.ledgerRows) {
    // Only jury rows: a ledger shared with the transform also holds rows with no verdict.
    if (typeof row.id !== 'string' || row.verdict === undefined || input.present.has(row.id) || seen.has(row.id)) continue;
    seen.add(row.id);
    take(row.id, 'ledger', row.verdict);
  }
  panels.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { panels, noJury, unreadable: unreadable.sort() };
}

type Replayed = { outcome: JuryOutcome; reason: string; aggregate: number | null; failed: string | null };

/** Decide one recorded panel under `rubric`, exactly as the judge stage would have. */
export function replayPanel(rubric: Rubric, judges: readonly unknown[], names: OutcomeNames): Replayed {
  // checkVerdict keeps only the criteria the edited rubric names: a removed criterion is ignored.
  const clean: Verdict[] = [];
  for (const raw of judges) {
    const checked = checkVerdict(raw, rubric);
    if (!checked.ok) return { outcome: 'unjudged', reason: checked.reason, aggregate: null, failed: null };
    clean.push(checked.verdict);
  }
  const decision = decideJury(rubric, clean);
  if (!decision.ok) return { outcome: 'unjudged', reason: decision.reason, aggregate: null, failed: null };
  const { verdict } = decision;
  return {
    outcome: verdict.passed ? names.pass : names.fail,
    reason: verdict.reason,
    aggregate: verdict.aggregate_score,
    failed: verdict.failed_criterion ?? null,
  };
}

/** Replay every recorded panel of `rubric.id` under `rubric`; stays are counted, flips listed. */
export function replayRubric(rubric: Rubric, recorded: Recorded, names: OutcomeNames): Replay {
  const [down, up, lost] = [`${names.pass}_to_${names.fail}`, `${names.fail}_to_${names.pass}`, 'judged_to_unjudged'];
  const flips: Replay['flips'] = { [down]: [], [up]: [], [lost]: [] };
  let considered = 0;
  let stay = 0;
  for (const panel of recorded.panels) {
    if (panel.rubric_id !== rubric.id) continue;
    considered++;
    const from = panel.passed ? names.pass : names.fail;
    const next = replayPanel(rubric, panel.judges, names);
    if (next.outcome === from) {
      stay++;
      continue;
    }
    const flip: Flip = {
      id: panel.id,
      source: panel.source,
      from,
      to: next.outcome,
      old_reason: panel.reason,
      new_reason: next.reason,
      old_aggregate: panel.aggregate_score,
      new_aggregate: next.aggregate,
      old_failed_criterion: panel.failed_criterion,
      new_failed_criterion: next.failed,
    };
    flips[next.outcome === 'unjudged' ? lost : from === names.pass ? down : up]!.push(flip);
  }
  return {
    rubric_id: rubric.id,
    considered,
    stay,
    no_jury: recorded.noJury,
    other_rubrics: recorded.panels.length - considered,
    flips,
    counts: Object.fromEntries(Object.entries(flips).map(([name, list]) => [name, list.length])),
  };
}
