/**
 * The promote stage (SPEC §5.6): the terminal record of a judged proposal — a pool entry or a
 * ledger row, mapped in YAML — and the stamp (promoted_at), committed together with its audit
 * row, so neither is ever written without the other. Idempotent: a stamped proposal is a no-op
 * success, and an entry or row already there (a promotion finished by hand) is never written
 * twice.
 *
 * Promote trusts nothing it did not decide: the proposal must still satisfy the schema its judge
 * stage checks, its recorded verdict must pass or fail the gate exactly as recorded, and its
 * history must show the judging transition — a hand-written "approved" file never reaches the pool.
 */
import { formatFindings } from '../config/findings.js';
import type { JudgeStageDef, PromoteStageDef } from '../config/types.js';
import type { Actor, Engine } from '../engine.js';
import { evaluate, secretsUsed } from '../expr/evaluate.js';
import { decideJury, TOLERANCE } from '../jury/gate.js';
import { checkVerdict, type Verdict } from '../jury/verdict.js';
import type { Proposal } from '../lifecycle/effects.js';
import { malformedFileNote, refused, type Outcome } from '../outcome.js';
import type { AuditRow, EntryWrite, Lease, LedgerWrite, Stored } from '../store/types.js';
import { cloneJson } from '../util/clone.js';
import { getPath, hasPath, isObject, setPath } from '../util/json-path.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../util/nesting.js';
import { listWords } from '../util/suggest.js';
import { judgeStagesInto, verdictField } from './judge-config.js';
import { planFor } from './judge.js';

export interface PromoteResult {
  outcome: Outcome;
  warnings: string[];
}

/** Everything a promotion adds to a commit. */
export interface Promotion {
  next: Proposal;
  audit: AuditRow;
  ledger: LedgerWrite[];
  entries: EntryWrite[];
}

export type PromotionPlan = { ok: true; promotion: Promotion; warnings: string[] } | { ok: false; outcome: Outcome; warnings: string[] };

export function promotableStates(stage: PromoteStageDef): string[] {
  return Object.keys(stage.outcomes);
}

/**
 * What the stage does with a proposal in `status` (a proposal's field: hostile until checked), or
 * undefined: only the stage's own outcomes, never a name every object inherits (`constructor`).
 */
export function outcomeFor(stage: PromoteStageDef, status: string): PromoteStageDef['outcomes'][string] | undefined {
  return Object.hasOwn(stage.outcomes, status) ? stage.outcomes[status] : undefined;
}

/** The no-op answer to promoting a stamped proposal: a rejection's row is recorded, not promoted (SPEC §5.6). */
function alreadyDone(stage: PromoteStageDef, id: string, status: string): string {
  if (recordKind(stage, status) === 'recorded') return `${id} is ${status}: its ${outcomeFor(stage, status)?.append} row is already recorded; nothing changed`;
  return `${id} is already promoted; nothing changed`;
}

/**
 * What promoting a proposal in `status` does, in one word: an entry written to a collection is
 * `promoted`; a row appended to a ledger (a rejection) is `recorded` — never called a promotion.
 */
export function recordKind(stage: PromoteStageDef, status: string): 'promoted' | 'recorded' {
  const outcome = outcomeFor(stage, status);
  return outcome?.append !== undefined && outcome.write === undefined ? 'recorded' : 'promoted';
}

/**
 * Why the recorded decision cannot be trusted, or undefined when it can: the judge stage that
 * leads into the proposal's status must have decided it exactly as recorded.
 */
async function distrust(engine: Engine, id: string, proposal: Proposal, status: string): Promise<string | undefined> {
  const judges = judgeStagesInto(engine.pipeline, status);
  if (judges.length === 0) return undefined; // no jury decides this status: nothing to re-check
  const reasons: string[] = [];
  for (const judge of judges) {
    const reason = await distrustBy(engine, judge, id, proposal, status);
    if (reason === undefined) return undefined;
    reasons.push(reason);
  }
  return reasons[0];
}

async function distrustBy(engine: Engine, judge: JudgeStageDef, id: string, proposal: Proposal, status: string): Promise<string | undefined> {
  if (judge.revalidate) {
    // The status is the judged one, the rest must be what the jury saw.
    const findings = engine.pipeline.schemas.check(judge.revalidate, { ...proposal, status: judge.from });
    if (findings.length) return `it fails the ${judge.revalidate} schema (${formatFindings(findings).slice(0, 3).join('; ')})`;
  }
  const field = verdictField(judge);
  const verdict = getPath(proposal, field);
  if (!isObject(verdict) || typeof verdict['passed'] !== 'boolean') return `it has no recorded ${field}`;
  const passTarget = engine.pipeline.lifecycle.transitions.find((t) => t.from === judge.from && t.event === judge.events.pass)?.target;
  if ((status === passTarget) !== verdict['passed']) return `its ${field} says passed: ${String(verdict['passed'])}, which does not lead to ${status}`;
  const plan = planFor(engine, judge, { id, proposal, version: '' });
  if (plan.kind === 'refused') return plan.message;
  if (plan.kind === 'no_jury') {
    if (verdict['rubric_id'] !== null || verdict['reason'] !== plan.reason || verdict['passed'] !== true)
      return `its ${field} is not the no-jury decision its ${judge.rubric.by} calls for`;
  } else {
    if (verdict['rubric_id'] !== plan.rubric.id) return `its ${field} was not decided under rubric ${plan.rubric.id}`;
    const judgesRaw = Array.isArray(verdict['judges']) ? verdict['judges'] : [];
    const clean: Verdict[] = [];
    for (const raw of judgesRaw) {
      const checked = checkVerdict(raw, plan.rubric);
      if (!checked.ok) return `its ${field} holds an unusable judge verdict (${checked.reason})`;
      clean.push(checked.verdict);
    }
    const again = decideJury(plan.rubric, clean);
    if (!again.ok) return `its ${field} could not have been decided (${again.reason})`;
    const recordedScore = verdict['aggregate_score'];
    const sameScore = typeof recordedScore === 'number' && Math.abs(recordedScore - (again.verdict.aggregate_score ?? Number.NaN)) <= TOLERANCE;
    if (again.verdict.passed !== verdict['passed'] || again.verdict.reason !== verdict['reason'] || !sameScore) {
      return `its ${field} does not match the gate (recomputed: ${again.verdict.reason}, recorded: ${String(verdict['reason'])})`;
    }
  }
  if (!(await judgedInHistory(engine, judge, id, status))) return 'no judging in its history: written by hand?';
  return undefined;
}

/** Does the audit log show the judge stage's transition into `status` as the last change of status? */
async function judgedInHistory(engine: Engine, judge: JudgeStageDef, id: string, status: string): Promise<boolean> {
  const judged = (row: { event: string; from: string | null; to: string }) =>
    row.to === status && row.from === judge.from && (row.event === judge.events.pass || row.event === judge.events.fail);
  const last = await engine.store.lastAudit(id);
  if (last === undefined) return false;
  if (judged(last)) return true;
  // Rows that keep the status (a promotion, an outcome) may follow the verdict: read the history.
  let latest: { event: string; from: string | null; to: string } | undefined;
  for await (const row of engine.store.audit({ id })) if (row.from !== row.to) latest = row;
  return latest !== undefined && judged(latest);
}

/**
 * Plan the promotion of a proposal as it is (or as a verdict just left it, `judgedNow`): the
 * entry or row, the stamp and the audit row — or the outcome when there is nothing to do.
 */
export async function planPromotion(
  engine: Engine,
  stage: PromoteStageDef,
  id: string,
  proposal: Proposal,
  actor: Actor,
  options: { judgedNow?: boolean } = {},
): Promise<PromotionPlan> {
  const status = String(proposal['status']);
  const outcome = outcomeFor(stage, status);
  const warnings: string[] = [];
  if (nestsDeeperThan(proposal, MAX_PRINT_DEPTH))
    return {
      ok: false,
      outcome: refused('schema_invalid', `${id} (${status}) nests more than ${MAX_PRINT_DEPTH} levels deep; it was not promoted`, undefined, id),
      warnings,
    };
  if (!outcome)
    return {
      ok: false,
      outcome: refused('status', `${id} is ${status}; only ${listWords(promotableStates(stage))} proposals are promoted`, undefined, id),
      warnings,
    };
  if (hasPath(proposal, stage.stamp)) {
    const message = alreadyDone(stage, id, status);
    return { ok: false, outcome: { kind: 'unchanged', id, event: 'promote', status, proposal, message }, warnings };
  }
  const expr = outcome.entry ?? outcome.row ?? {};
  // What the record needs comes first (it says what to fix); the secrets are not needed for that.
  const placeholders = Object.fromEntries([...secretsUsed(expr)].map((name) => [name, '']));
  const needs = evaluate(expr, { root: proposal, now: '', secrets: placeholders, copy: false }).missing;
  if (needs.length) {
    return {
      ok: false,
      outcome: refused('missing_fields', `${id} (${status}) was not promoted: it has no ${listWords([...new Set(needs)], 'and')}`, undefined, id),
      warnings,
    };
  }
  // A verdict this process has just decided needs no second look; anything read from the store does.
  if (!options.judgedNow) {
    const distrusted = await distrust(engine, id, proposal, status);
    if (distrusted) return { ok: false, outcome: refused('untrusted', `${id} (${status}) was not promoted: ${distrusted}`, undefined, id), warnings };
  }
  const secrets: Record<string, string> = {};
  for (const name of secretsUsed(expr)) {
    const secret = await engine.secret(name);
    if (!secret.ok) return { ok: false, outcome: refused('secret', `${id} (${status}) was not promoted: ${secret.message}`, undefined, id), warnings };
    warnings.push(...secret.warnings);
    secrets[name] = secret.value;
  }
  const now = engine.now();
  const { value, missing } = evaluate(expr, { root: proposal, now, secrets, copy: false });
  if (missing.length) {
    return {
      ok: false,
      outcome: refused('missing_fields', `${id} (${status}) was not promoted: it has no ${listWords([...new Set(missing)], 'and')}`, undefined, id),
      warnings,
    };
  }
  const next = cloneJson(proposal);
  setPath(next, stage.stamp, now);
  const promotion: Promotion = {
    next,
    audit: { at: now, id, event: 'promote', from: status, to: status, stage: stage.name, actor },
    ledger: outcome.append ? [{ ledger: outcome.append, row: value as Record<string, unknown>, ...(outcome.key ? { once: outcome.key } : {}) }] : [],
    entries: outcome.write ? [{ op: 'put', collection: outcome.write, id, entry: value }] : [],
  };
  return { ok: true, promotion, warnings };
}

/** Promote one stored proposal in its own commit. */
export async function promote(engine: Engine, stage: PromoteStageDef, stored: Stored, actor: Actor, lease?: Lease): Promise<PromoteResult> {
  const { id, proposal } = stored;
  const plan = await planPromotion(engine, stage, id, proposal, actor);
  if (!plan.ok) return { outcome: plan.outcome, warnings: plan.warnings };
  const { promotion, warnings } = plan;
  const committed = await engine.store.commit({
    id,
    version: stored.version,
    next: promotion.next,
    audit: [promotion.audit],
    ledger: promotion.ledger,
    entries: promotion.entries,
    ...(lease ? { lease } : {}),
  });
  const status = String(proposal['status']);
  if (!committed.ok) {
    // Another promoter may have stamped it meanwhile: then this is the no-op success it looks like.
    const again = await engine.store.read(id);
    // Broken meanwhile (emptied, replaced by hand): reported and skipped, never a refusal (SPEC §4).
    if (again.kind === 'malformed') return { outcome: { kind: 'unjudged', id, reason: malformedFileNote(id, again.reason) }, warnings };
    if (again.kind === 'found' && hasPath(again.stored.proposal, stage.stamp)) {
      const message = alreadyDone(stage, id, status);
      return { outcome: { kind: 'unchanged', id, event: 'promote', status, proposal: again.stored.proposal, message }, warnings };
    }
    const current = again.kind === 'found' ? String(again.stored.proposal['status']) : 'missing';
    return {
      outcome: refused('changed', `${id} (now ${current}) changed while it was being promoted; nothing was written, run promote again`, undefined, id),
      warnings,
    };
  }
  return {
    outcome: {
      kind: 'committed',
      id,
      event: 'promote',
      from: status,
      to: status,
      proposal: promotion.next,
      version: committed.version,
      audit: [promotion.audit],
    },
    warnings,
  };
}
