/**
 * `pipeline run <stage>`: one batch per automatic stage kind. Each item is claimed, processed and
 * committed on its own, so a crash costs at most the items in flight; the summary counts every
 * outcome and lists what was left for the next run.
 */
import { PipelineError, EXIT } from '../errors.js';
import type { Engine } from '../engine.js';
import type { JudgeStageDef, PromoteStageDef, StageDef, TransformStageDef } from '../config/types.js';
import { Providers, type ProviderSource } from '../providers/index.js';
import { judgePanel, planFor, precheck, type JudgeResult } from '../stages/judge.js';
import { promotableStates, promote, promoteAfterVerdict } from '../stages/promote.js';
import { pregatePasses, readSources, sourceDir, transformOne } from '../stages/transform.js';
import type { Store, Stored } from '../store/types.js';
import { runBatch } from './batch.js';
import { emptyPlan, planLines, type BatchPlan } from './plan.js';
import { silentProgress, type Progress } from './progress.js';
import { addUsage, count, emptySummary, type Summary } from './summary.js';

export interface RunOptions {
  concurrency: number;
  limit?: number | undefined;
  dryRun: boolean;
  yes: boolean;
  useCache: boolean;
  source?: string | undefined;
  cwd: string;
  signal?: AbortSignal;
  /** Can we ask a person (a terminal)? */
  interactive: boolean;
  ask: (question: string) => Promise<boolean>;
  progress: (stage: string, total: number) => Progress;
  /** A message for the person, during the run. */
  note: (line: string) => void;
  /** Providers to use instead of the configured ones (tests). */
  providers?: ProviderSource;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Ask before paid calls; refuse without a terminal and without --yes. Returns false to stop. */
async function confirmSpend(plan: BatchPlan, noun: string, options: RunOptions): Promise<boolean> {
  if (options.dryRun) {
    for (const line of planLines(plan, noun)) options.note(line);
    options.note('dry run: nothing was called and nothing was written');
    return false;
  }
  if (plan.paidCalls === 0 || options.yes) return true;
  for (const line of planLines(plan, noun)) options.note(line);
  if (!options.interactive) {
    throw new PipelineError('run.unconfirmed', `${plan.stage}: this batch makes ${plan.paidCalls} paid model call${plan.paidCalls === 1 ? '' : 's'}; nothing was done`, {
      exitCode: EXIT.refused,
      hint: 'pass --yes to go ahead without a question (there is no terminal to ask on), or --dry-run to see the plan',
    });
  }
  if (await options.ask(`spend ${plan.paidCalls} paid model call${plan.paidCalls === 1 ? '' : 's'}? [y/N] `)) return true;
  options.note('cancelled: nothing was called and nothing was written');
  return false;
}

/**
 * What every batch does once it is going ahead (after any spend question, never on a dry run):
 * sweep what killed processes left behind and repair the audit rows a crash left out.
 */
async function beginRun(engine: Engine, stage: StageDef, options: RunOptions, statuses?: Awaited<ReturnType<Store['statuses']>>): Promise<void> {
  await engine.store.sweep();
  const repaired = await engine.repairAudit(stage.name, 'run', statuses);
  if (repaired.added) options.note(`${stage.name}: added ${repaired.added} audit row${repaired.added === 1 ? '' : 's'} missing after an interrupted commit`);
  if (repaired.unexplained.length) options.note(`${stage.name}: ${repaired.unexplained.length} proposal${repaired.unexplained.length === 1 ? ' has' : 's have'} no audit history (written by hand?): ${repaired.unexplained.slice(0, 5).join(', ')}${repaired.unexplained.length > 5 ? ', …' : ''}`);
}

export async function runStage(engine: Engine, stage: StageDef, options: RunOptions): Promise<Summary> {
  switch (stage.kind) {
    case 'transform':
      return runTransform(engine, stage, options);
    case 'judge':
      return runJudge(engine, stage, options);
    case 'promote':
      return runPromote(engine, stage, options);
    case 'review':
      throw new PipelineError('run.review', 'the review stage is run by a person: use `pipeline run review` on a terminal');
  }
}

/** Another run still held it at the end of the batch: left for a retry, never silently skipped. */
function held(summary: Summary, key: string, options: RunOptions): void {
  count(summary, 'held_by_another_run');
  summary.unjudged.push(key);
  options.note(`${key}: another run still holds it — left for a retry (run again once that run is done)`);
}

async function readAll(engine: Engine, ids: readonly string[], options: RunOptions): Promise<Stored[]> {
  const out: Stored[] = [];
  for (const id of ids) {
    const result = await engine.store.read(id);
    if (result.kind === 'found') out.push(result.stored);
    else if (result.kind === 'malformed') options.note(`${id}: the proposal file is malformed (${result.reason}) — skipped, left as it is`);
  }
  return out;
}

async function runJudge(engine: Engine, stage: JudgeStageDef, options: RunOptions): Promise<Summary> {
  const targets = engine.pipeline.lifecycle.transitions.filter((t) => t.from === stage.from && (t.event === stage.events.pass || t.event === stage.events.fail));
  const outcomes = [...new Set(targets.map((t) => t.target!).filter(Boolean)), 'unjudged', 'refused'];
  const summary = emptySummary(stage.name, outcomes);
  const statuses = await engine.store.statuses();
  const { malformed } = statuses;
  const all = [...statuses.byId].filter(([, entry]) => entry.status === stage.from).map(([id]) => id).sort();
  for (const id of malformed) options.note(`${id}: the proposal file is malformed — skipped, left as it is`);
  const ids = options.limit !== undefined ? all.slice(0, options.limit) : all;
  const providers = options.providers ?? new Providers(engine.pipeline, { env: engine.env, now: () => engine.now(), concurrency: options.concurrency });

  const paidTypes = Object.entries(stage.judges).filter(([, name]) => providers.get(name).paid).map(([type]) => type);
  if (paidTypes.length || options.dryRun) {
    const plan = emptyPlan(stage.name);
    const providerNames = new Set<string>();
    for (const stored of await readAll(engine, ids, options)) {
      plan.items++;
      if (precheck(engine, stage, stored)) {
        plan.refused++;
        continue;
      }
      const judgePlan = planFor(engine, stage, stored);
      if (judgePlan.kind === 'refused') plan.refused++;
      else if (judgePlan.kind === 'no_jury') plan.groups[`no jury (${judgePlan.reason})`] = (plan.groups[`no jury (${judgePlan.reason})`] ?? 0) + 1;
      else {
        plan.groups[judgePlan.rubric.id] = (plan.groups[judgePlan.rubric.id] ?? 0) + 1;
        for (const seat of judgePlan.rubric.judge_types) {
          const provider = providers.get(stage.judges[seat]!);
          if (provider.deterministic) continue;
          plan.calls++;
          if (provider.paid) {
            plan.paidCalls++;
            providerNames.add(provider.name);
          }
        }
      }
    }
    plan.paidProviders = [...providerNames];
    if (!(await confirmSpend(plan, 'proposal', options))) return summary;
  }
  await beginRun(engine, stage, options, statuses);

  const then = stage.then ? engine.pipeline.stages.find((candidate) => candidate.name === stage.then) : undefined;
  const progress = ids.length ? options.progress(stage.name, ids.length) : silentProgress;
  const record = async (id: string, result: JudgeResult): Promise<void> => {
    for (const usage of result.spent) addUsage(summary, usage);
    const { outcome } = result;
    if (outcome.kind === 'committed') {
      count(summary, outcome.to);
      if (then?.kind === 'promote') {
        const promoted = await promoteAfterVerdict(engine, then, outcome, 'run');
        for (const warning of promoted.warnings) options.note(`warning: ${warning}`);
        if (promoted.failure) options.note(`${id}: judged ${outcome.to}, but promotion failed: ${promoted.failure} (the verdict stands)`);
      }
    } else if (outcome.kind === 'unjudged') {
      if (options.signal?.aborted) return;
      count(summary, 'unjudged');
      summary.unjudged.push(id);
      options.note(`could not be judged: ${id}: ${outcome.reason}`);
    } else if (outcome.kind === 'refused') {
      count(summary, 'refused');
      summary.refused.push(id);
      options.note(`refused: ${outcome.message}${outcome.details ? `\n${outcome.details.map((line) => `  - ${line}`).join('\n')}` : ''}`);
    }
    progress.tick(`${summary.counts[outcomes[0]!] ?? 0} ${outcomes[0]}`);
  };
  await runBatch({
    store: engine.store,
    stage: stage.name,
    items: ids,
    keyOf: (id) => id,
    concurrency: options.concurrency,
    ...(options.signal ? { signal: options.signal } : {}),
    onError: (id, error) => {
      summary.refused.push(id);
      count(summary, 'refused');
      options.note(`${id}: ${describeError(error)} — left as it was`);
    },
    onHeld: (id) => held(summary, id, options),
    work: async (id) => {
      const read = await engine.store.read(id);
      if (read.kind !== 'found') {
        if (read.kind === 'malformed') options.note(`${id}: the proposal file is malformed (${read.reason}) — skipped, left as it is`);
        return;
      }
      if (read.stored.proposal['status'] !== stage.from) return; // decided by someone else meanwhile
      const judgement = await judgePanel(engine, stage, read.stored, { providers, useCache: options.useCache, actor: 'run', ...(options.signal ? { signal: options.signal } : {}) });
      if (judgement.kind === 'done') {
        await record(id, judgement.result);
        return;
      }
      // The jury has answered: commit (and promote) after handing the slot to the next proposal.
      return async () => record(id, await judgement.commit());
    },
  });
  progress.done();
  summary.interrupted = Boolean(options.signal?.aborted);
  summary.unjudged.sort();
  summary.refused.sort();
  return summary;
}

async function runTransform(engine: Engine, stage: TransformStageDef, options: RunOptions): Promise<Summary> {
  const summary = emptySummary(stage.name, ['proposed', 'declined', 'untouched', 'already_handled', 'skipped_by_pregate']);
  const dir = sourceDir(engine, stage, options.source, options.cwd);
  const { records, problems } = readSources(dir, stage);
  for (const problem of problems) options.note(`${stage.name}: ${problem}`);
  const todo = [];
  for (const record of records) {
    if (await engine.keyHandled(record.key)) count(summary, 'already_handled');
    else if (!pregatePasses(stage, record.record)) count(summary, 'skipped_by_pregate');
    else todo.push(record);
  }
  const batch = (options.limit !== undefined ? todo.slice(0, options.limit) : todo).map((record) => ({ ...record, id: engine.ids() }));
  const providers = options.providers ?? new Providers(engine.pipeline, { env: engine.env, now: () => engine.now(), concurrency: options.concurrency });
  const provider = providers.get(stage.provider);
  const plan = { ...emptyPlan(stage.name), items: batch.length, calls: provider.deterministic ? 0 : batch.length, paidCalls: provider.paid ? batch.length : 0, paidProviders: provider.paid ? [provider.name] : [] };
  if ((provider.paid || options.dryRun) && !(await confirmSpend(plan, 'record', options))) return summary;
  await beginRun(engine, stage, options);

  const progress = batch.length ? options.progress(stage.name, batch.length) : silentProgress;
  await runBatch({
    store: engine.store,
    stage: stage.name,
    items: batch,
    keyOf: (record) => record.key,
    concurrency: options.concurrency,
    ...(options.signal ? { signal: options.signal } : {}),
    onHeld: (record) => held(summary, record.key, options),
    onError: (record, error) => {
      count(summary, 'untouched');
      summary.unjudged.push(record.key);
      options.note(`${stage.name}: ${record.key}: ${describeError(error)} — left untouched`);
    },
    work: async (record) => {
      const result = await transformOne(engine, stage, record, { providers, useCache: options.useCache, actor: 'run', ...(options.signal ? { signal: options.signal } : {}) });
      if (result.spent) addUsage(summary, result.spent);
      if (result.kind === 'proposed') count(summary, 'proposed');
      else if (result.kind === 'declined') count(summary, 'declined');
      else if (result.kind === 'skipped') count(summary, result.reason === 'pregate' ? 'skipped_by_pregate' : 'already_handled');
      else if (!options.signal?.aborted) {
        count(summary, 'untouched');
        summary.unjudged.push(record.key);
        options.note(`${stage.name}: ${record.key} left untouched (retried next run): ${result.reason}`);
      }
      progress.tick(`${summary.counts['proposed']} proposed`);
    },
  });
  progress.done();
  summary.interrupted = Boolean(options.signal?.aborted);
  summary.unjudged.sort();
  return summary;
}

async function runPromote(engine: Engine, stage: PromoteStageDef, options: RunOptions): Promise<Summary> {
  const summary = emptySummary(stage.name, ['promoted', 'already_promoted', 'refused']);
  // Stamped proposals are done: the status index knows which, so they are not even read.
  const states = promotableStates(stage);
  const statuses = await engine.store.statuses();
  const { byId, malformed } = statuses;
  for (const id of malformed) options.note(`${id}: the proposal file is malformed — skipped, left as it is`);
  const ids: string[] = [];
  for (const [id, { status, marked }] of byId) {
    if (!states.includes(status)) continue;
    if (marked.includes(stage.stamp)) count(summary, 'already_promoted');
    else ids.push(id);
  }
  ids.sort();
  const batch = options.limit !== undefined ? ids.slice(0, options.limit) : ids;
  if (options.dryRun) {
    options.note(`${stage.name}: ${batch.length} judged proposal${batch.length === 1 ? '' : 's'} to check; dry run: nothing was written`);
    return summary;
  }
  await beginRun(engine, stage, options, statuses);
  await runBatch({
    store: engine.store,
    stage: stage.name,
    items: batch,
    keyOf: (id) => id,
    concurrency: options.concurrency,
    ...(options.signal ? { signal: options.signal } : {}),
    onHeld: (id) => held(summary, id, options),
    onError: (id, error) => {
      count(summary, 'refused');
      summary.refused.push(id);
      options.note(`${id}: ${describeError(error)} — left as it was`);
    },
    work: async (id) => {
      const read = await engine.store.read(id);
      if (read.kind !== 'found') return;
      const result = await promote(engine, stage, read.stored, 'run');
      for (const warning of result.warnings) options.note(`warning: ${warning}`);
      if (result.outcome.kind === 'committed') count(summary, 'promoted');
      else if (result.outcome.kind === 'unchanged') count(summary, 'already_promoted');
      else if (result.outcome.kind === 'refused') {
        count(summary, 'refused');
        summary.refused.push(id);
        options.note(`refused: ${result.outcome.message}`);
      }
    },
  });
  summary.interrupted = Boolean(options.signal?.aborted);
  summary.refused.sort();
  return summary;
}
