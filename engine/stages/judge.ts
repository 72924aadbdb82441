/**
 * The judge stage (SPEC §5.4): pick the rubric from a proposal field, run the panel in parallel,
 * validate every verdict, decide with the shared jury code, and commit the verdict — or leave the
 * proposal untouched as "could not be judged". Used by `run judge` (providers called here) and by
 * `pipeline judge --verdicts` (verdicts produced elsewhere); both go through `decideAndCommit`.
 */
import { formatFindings } from '../config/findings.js';
import type { JudgeStageDef, Rubric } from '../config/types.js';
import type { Actor, Engine, Extend } from '../engine.js';
import { renderPrompt } from '../expr/template.js';
import { decideJury, noJuryVerdict, type JuryVerdict } from '../jury/gate.js';
import { checkVerdict, type Usage, type Verdict } from '../jury/verdict.js';
import { refused, type Outcome } from '../outcome.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../util/nesting.js';
import type { ProviderSource } from '../providers/index.js';
import { callProvider } from '../providers/call.js';
import type { Lease, Stored } from '../store/types.js';
import { getPath } from '../util/json-path.js';
import { listWords } from '../util/suggest.js';
import { verdictField } from './judge-config.js';

export { judgeStagesInto, thenStage, verdictField } from './judge-config.js';

export type JudgePlan = { kind: 'no_jury'; reason: string } | { kind: 'jury'; rubric: Rubric } | { kind: 'refused'; message: string };

/** Which rubric judges this proposal, from the stage's declared map. */
export function planFor(engine: Engine, stage: JudgeStageDef, stored: Stored): JudgePlan {
  const value = getPath(stored.proposal, stage.rubric.by);
  // The value is the proposal's (hostile until checked): only the map's own keys select a rubric,
  // never a name every object inherits (`toString`, `constructor`).
  const key = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
  const entry = key !== undefined && Object.hasOwn(stage.rubric.map, key) ? stage.rubric.map[key] : undefined;
  if (entry === undefined) {
    return {
      kind: 'refused',
      message: `${stored.id} (${String(stored.proposal['status'])}): ${stage.rubric.by} ${JSON.stringify(value ?? null)} has no rubric (expected ${listWords(Object.keys(stage.rubric.map))})`,
    };
  }
  if (typeof entry !== 'string') return { kind: 'no_jury', reason: entry.none };
  const rubric = engine.pipeline.rubrics.get(entry);
  if (!rubric) return { kind: 'refused', message: `rubric ${entry} is not loaded` };
  return { kind: 'jury', rubric };
}

/** Status and schema checks that come before any jury (a file edited by hand must not reach the pool). */
export function checkJudgeable(engine: Engine, stage: JudgeStageDef, stored: Stored): Outcome | undefined {
  const status = String(stored.proposal['status']);
  if (status !== stage.from) {
    const froms = [...new Set(engine.pipeline.stages.flatMap((each) => (each.kind === 'judge' ? [each.from] : [])))];
    return refused('status', `${stored.id} is ${status}; only ${listWords(froms)} proposals are judged`, undefined, stored.id);
  }
  // No real proposal nests this deep; judging one would overflow a serialiser halfway.
  if (nestsDeeperThan(stored.proposal, MAX_PRINT_DEPTH))
    return refused('schema_invalid', `${stored.id} (${status}) nests more than ${MAX_PRINT_DEPTH} levels deep; it was not judged`, undefined, stored.id);
  if (stage.revalidate) {
    const findings = engine.pipeline.schemas.check(stage.revalidate, stored.proposal);
    if (findings.length)
      return refused('schema_invalid', `${stored.id} (${status}) fails the ${stage.revalidate} schema; it was not judged`, formatFindings(findings), stored.id);
  }
  return undefined;
}

/** What the promotion that follows a verdict did (SPEC §5.4: a failure leaves the verdict as it is). */
export interface FollowUp {
  stage: string;
  promoted: boolean;
  failure?: string;
  warnings: string[];
}

export interface JudgeResult {
  outcome: Outcome;
  /** The verdict's judges' usage (tokens actually spent in this run; cached answers excluded). */
  spent: Usage[];
  verdict?: JuryVerdict;
  /** Set when the stage hands verdicts on (`then:`) and a verdict was committed. */
  followUp?: FollowUp;
}

export interface CommitOptions {
  actor: Actor;
  /** The run's lease on the proposal. */
  lease?: Lease;
  /** What follows the verdict in the same commit (its promotion), and where it reports. */
  then?: { extend: Extend; report: FollowUp };
}

/** Commit a decided verdict (or report the proposal unjudged), only if it is still as read. */
export async function decideAndCommit(
  engine: Engine,
  stage: JudgeStageDef,
  stored: Stored,
  plan: JudgePlan,
  judges: Verdict[],
  options: CommitOptions,
): Promise<Omit<JudgeResult, 'spent'>> {
  let verdict: JuryVerdict;
  if (plan.kind === 'refused') return { outcome: refused('no_rubric', plan.message, undefined, stored.id) };
  if (plan.kind === 'no_jury') verdict = noJuryVerdict(plan.reason);
  else {
    const decision = decideJury(plan.rubric, judges);
    if (!decision.ok) return { outcome: { kind: 'unjudged', id: stored.id, reason: decision.reason } };
    verdict = decision.verdict;
  }
  const event = verdict.passed ? stage.events.pass : stage.events.fail;
  const outcome = await engine.applyTo(
    stored,
    event,
    { [verdictField(stage)]: verdict },
    {
      stage: stage.name,
      actor: options.actor,
      ...(options.lease ? { lease: options.lease } : {}),
      ...(options.then ? { extend: options.then.extend } : {}),
    },
  );
  if (outcome.kind === 'refused' && (outcome.code === 'changed' || outcome.code === 'lease')) {
    const reason = outcome.code === 'lease' ? "the run's lease on it expired while it was being judged" : 'the proposal changed while it was being judged';
    return { outcome: { kind: 'unjudged', id: stored.id, reason }, verdict };
  }
  return { outcome, verdict, ...(options.then && outcome.kind === 'committed' ? { followUp: options.then.report } : {}) };
}

export interface PanelOptions {
  providers: ProviderSource;
  useCache: boolean;
  signal?: AbortSignal;
}

/** The prompt scope a judge template sees. */
function promptScope(engine: Engine, stage: JudgeStageDef, stored: Stored, rubric: Rubric, judgeType: string) {
  const payload = engine.pipeline.def.proposal.payload;
  const criteria = rubric.criteria
    .map(
      (criterion) =>
        `- ${criterion.name} (weight ${criterion.weight}${criterion.min_pass !== undefined ? `, floor ${criterion.min_pass}` : ''})${stage.questions?.[criterion.name] ? `: ${stage.questions[criterion.name]}` : ''}`,
    )
    .join('\n');
  return {
    ...stored.proposal,
    proposal: stored.proposal,
    [payload]: stored.proposal[payload],
    rubric,
    criteria,
    criterion_names: rubric.criteria.map((criterion) => criterion.name).join(', '),
    judge_type: judgeType,
  };
}

/**
 * Call every seat of the panel in parallel; any unusable answer makes the proposal unjudged.
 * `keep` puts the valid answers in the answer cache: the caller runs it before it commits (or
 * gives up), outside the concurrency slot — a cache write must not keep the next call waiting.
 *
 * `decides` (the jury's own checks: coverage, floors, the panel's make-up): answers kept from an
 * earlier run that are each a verdict but together decide nothing would decide nothing on every
 * run until `--no-cache` — so the seats served from the cache are asked again, once, and their
 * fresh answers replace the kept ones (SPEC §5.4: the next run retries an unjudged proposal).
 */
export async function runPanel(
  engine: Engine,
  stage: JudgeStageDef,
  stored: Stored,
  rubric: Rubric,
  options: PanelOptions & { decides?: (judges: Verdict[]) => boolean },
): Promise<
  { ok: true; judges: Verdict[]; spent: Usage[]; keep: () => Promise<void> } | { ok: false; reason: string; spent: Usage[]; keep: () => Promise<void> }
> {
  const spent: Usage[] = [];
  const keeps: (() => Promise<void>)[] = [];
  const keep = async () => {
    await Promise.all(keeps.map((one) => one()));
  };
  type Seat = { ok: true; verdict: Verdict; cached: boolean; keep: () => Promise<void> } | { ok: false; reason: string };
  const askSeat = async (seat: string, position: number, fresh: boolean): Promise<Seat> => {
    const provider = options.providers.get(stage.judges[seat]!);
    // Rendered with closing tags neutralised: the proposal cannot close the delimiter around it.
    // A checks judge reads the proposal, never a prompt: rendering one per seat was pure cost.
    const prompt = provider?.kind === 'checks' ? '' : renderPrompt(stage.prompts?.[seat] ?? '', promptScope(engine, stage, stored, rubric, seat));
    const request = {
      purpose: 'judge' as const,
      prompt,
      input: { proposal: stored.proposal, rubric, criteria: rubric.criteria.map((criterion) => criterion.name), judge_type: seat },
      env: { PIPELINE_STAGE: stage.name, PIPELINE_JUDGE_TYPE: seat, PIPELINE_PROPOSAL_ID: stored.id },
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const ask = (again: boolean) =>
      callProvider(engine.store.cache, provider, request, {
        useCache: options.useCache,
        fresh: again,
        maxAnswerBytes: stage.max_answer_bytes,
        seat: `${position}`,
      });
    let result = await ask(fresh);
    // A kept answer that is no verdict (the cache edited by hand, or checks stricter than when it
    // was kept) is no answer: the judge is asked, once, and a valid answer replaces it.
    if (result.ok && result.cached && !checkVerdict(result.value, rubric, { seat, usage: result.usage }).ok) result = await ask(true);
    if (result.ok && !result.cached && !provider.deterministic) spent.push(result.usage);
    if (!result.ok) return { ok: false, reason: `the ${seat} judge gave no usable answer: ${result.reason}` };
    const checked = checkVerdict(result.value, rubric, { seat, usage: result.usage });
    if (!checked.ok) return { ok: false, reason: checked.reason };
    return { ok: true, verdict: checked.verdict, cached: result.cached, keep: result.keep };
  };
  let answers: Seat[] = await Promise.all(rubric.judge_types.map((seat, position) => askSeat(seat, position, false)));
  const usable = (seats: Seat[]) => seats.every((answer) => answer.ok);
  const verdicts = (seats: Seat[]) => seats.map((answer) => (answer as { verdict: Verdict }).verdict);
  if (usable(answers) && options.decides && answers.some((answer) => answer.ok && answer.cached) && !options.decides(verdicts(answers))) {
    answers = await Promise.all(
      answers.map((answer, position): Seat | Promise<Seat> => (answer.ok && answer.cached ? askSeat(rubric.judge_types[position]!, position, true) : answer)),
    );
  }
  for (const answer of answers) if (answer.ok) keeps.push(answer.keep);
  const failure = answers.find((answer) => !answer.ok);
  if (failure && !failure.ok) return { ok: false, reason: failure.reason, spent, keep };
  return { ok: true, judges: verdicts(answers), spent, keep };
}

/** A judgement in two steps: the jury (slow, remote), then the commit (local). */
export type Judgement = { kind: 'done'; result: JudgeResult } | { kind: 'decided'; spent: Usage[]; commit: () => Promise<JudgeResult> };

/** Everything before the commit: checks, rubric, and the panel's answers. */
export async function judgePanel(engine: Engine, stage: JudgeStageDef, stored: Stored, options: PanelOptions & CommitOptions): Promise<Judgement> {
  const early = checkJudgeable(engine, stage, stored);
  if (early) return { kind: 'done', result: { outcome: early, spent: [] } };
  const plan = planFor(engine, stage, stored);
  const commit = (judges: Verdict[], spent: Usage[], keep?: () => Promise<void>) => async (): Promise<JudgeResult> => {
    // The answers are cached before the verdict is committed: a re-run after a crash pays for nothing twice.
    await keep?.();
    return { ...(await decideAndCommit(engine, stage, stored, plan, judges, options)), spent };
  };
  if (plan.kind !== 'jury') return { kind: 'decided', spent: [], commit: commit([], []) };
  const { rubric } = plan;
  const panel = await runPanel(engine, stage, stored, rubric, { ...options, decides: (judges) => decideJury(rubric, judges).ok });
  if (!panel.ok) {
    await panel.keep(); // the seats that did answer are not paid for again on the retry
    return { kind: 'done', result: { outcome: { kind: 'unjudged', id: stored.id, reason: panel.reason }, spent: panel.spent } };
  }
  return { kind: 'decided', spent: panel.spent, commit: commit(panel.judges, panel.spent, panel.keep) };
}

/** Judge one proposal with the configured providers. */
export async function judgeWithProviders(engine: Engine, stage: JudgeStageDef, stored: Stored, options: PanelOptions & CommitOptions): Promise<JudgeResult> {
  const judgement = await judgePanel(engine, stage, stored, options);
  return judgement.kind === 'done' ? judgement.result : judgement.commit();
}

/**
 * Judge one proposal with verdicts produced elsewhere: a strict JSON array; anything else — not
 * an array, an element that is not an object, a verdict that fails validation — is unjudged.
 */
export async function judgeWithVerdicts(
  engine: Engine,
  stage: JudgeStageDef,
  stored: Stored,
  input: { ok: true; value: unknown } | { ok: false; reason: string },
  options: CommitOptions,
): Promise<JudgeResult> {
  const early = checkJudgeable(engine, stage, stored);
  if (early) return { outcome: early, spent: [] };
  // The input's shape is checked whatever the rubric: bad input is never a decision, even for a
  // tier that runs no jury.
  const unjudged = (reason: string): JudgeResult => ({ outcome: { kind: 'unjudged', id: stored.id, reason }, spent: [] });
  if (!input.ok) return unjudged(input.reason);
  if (!Array.isArray(input.value)) return unjudged('the verdicts are not a JSON array');
  const notObject = input.value.findIndex((raw) => raw === null || typeof raw !== 'object' || Array.isArray(raw));
  if (notObject >= 0) return unjudged(`verdict ${notObject + 1} is not a JSON object`);
  const plan = planFor(engine, stage, stored);
  const judges: Verdict[] = [];
  if (plan.kind === 'jury') {
    for (const [index, raw] of input.value.entries()) {
      const checked = checkVerdict(raw, plan.rubric);
      if (!checked.ok) return unjudged(`verdict ${index + 1}: ${checked.reason}`);
      judges.push(checked.verdict);
    }
  }
  return { ...(await decideAndCommit(engine, stage, stored, plan, judges, options)), spent: [] };
}
