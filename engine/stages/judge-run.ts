/**
 * `run <judge stage>` for the batch driver: the work is the proposals in the stage's `from`
 * state; each one is judged by its panel (in a concurrency slot), then committed with its
 * promotion (after the slot). Outcomes are the states the stage's events lead to, plus
 * "unjudged" (left for a retry) and "refused".
 */
import type { JudgeStageDef } from '../config/types.js';
import type { Engine } from '../engine.js';
import type { ProviderSource } from '../providers/index.js';
import { judgeBatchPlan, type ItemPlan } from '../runner/plan.js';
import { tallyOf } from '../store/tally.js';
import type { Classified, StageRun } from '../runner/driver.js';
import { followUpOf } from './follow-up.js';
import { checkJudgeable, judgePanel, planFor, thenStage, type JudgeResult } from './judge.js';
import { recordKind } from './promote.js';
import { getPath, isObject } from '../util/json-path.js';
import { tidyNumber } from '../util/numbers.js';
import { malformedFileNote } from '../outcome.js';

export function judgeRun(engine: Engine, stage: JudgeStageDef, providers: ProviderSource): StageRun<string> {
  const targets = engine.pipeline.lifecycle.transitions.filter(
    (t) => t.from === stage.from && (t.event === stage.events.pass || t.event === stage.events.fail),
  );
  const outcomes = [...new Set(targets.map((t) => t.target!).filter(Boolean)), 'unjudged', 'refused'];
  const paid = Object.values(stage.judges).some((name) => providers.get(name).paid);
  const promoteStage = thenStage(engine.pipeline, stage);
  const failed = targets.find((t) => t.event === stage.events.fail)?.target;

  /** Why a proposal was failed, for the summary: the gate's reason, the floor that failed, the aggregate. */
  const whyFailed = (proposal: Record<string, unknown>): string | undefined => {
    const verdict = getPath(proposal, stage.verdict);
    if (!isObject(verdict) || typeof verdict['reason'] !== 'string') return undefined;
    const floor = typeof verdict['failed_criterion'] === 'string' ? ` (${verdict['failed_criterion']})` : '';
    const score = typeof verdict['aggregate_score'] === 'number' ? `, aggregate ${tidyNumber(Number(verdict['aggregate_score'].toFixed(3)))}` : '';
    return `${verdict['reason']}${floor}${score}`;
  };

  const classify = (id: string, result: JudgeResult): Classified => {
    const { outcome } = result;
    const usage = result.spent;
    switch (outcome.kind) {
      case 'committed': {
        const follow = result.followUp;
        const notes = (follow?.warnings ?? []).map((warning) => `warning: ${warning}`);
        if (follow?.failure) notes.push(`${id}: judged ${outcome.to}, but promotion failed: ${follow.failure} (the verdict stands)`);
        const why = outcome.to === failed ? whyFailed(outcome.proposal) : undefined;
        const then = follow?.promoted && promoteStage ? { stage: promoteStage.name, outcome: recordKind(promoteStage, outcome.to) } : undefined;
        const extra = { ...(notes.length ? { note: notes.join('\n') } : {}), ...(why !== undefined ? { why } : {}), ...(then ? { then } : {}) };
        return { outcome: outcome.to, usage, ...extra };
      }
      case 'unjudged':
        return { outcome: 'unjudged', retry: true, usage, note: `could not be judged: ${id}: ${outcome.reason}` };
      case 'refused':
        return {
          outcome: 'refused',
          refused: true,
          usage,
          note: `refused: ${outcome.message}${outcome.details ? `\n${outcome.details.map((line) => `  - ${line}`).join('\n')}` : ''}`,
        };
      case 'unchanged':
        return { outcome: 'unchanged', usage };
    }
  };

  return {
    outcomes: () => outcomes,
    noun: 'proposal',
    retryLabel: 'could not be judged',
    async select() {
      const total = (await tallyOf(engine.store, { status: stage.from })).reduce((sum, tally) => sum + tally.count, 0);
      return { units: { query: { status: stage.from } }, total };
    },
    mustPlan: (options) => paid || options.dryRun,
    async plan(ids) {
      const items: ItemPlan[] = [];
      for (const id of ids) {
        const read = await engine.store.read(id);
        if (read.kind !== 'found') continue;
        if (checkJudgeable(engine, stage, read.stored)) {
          items.push({ kind: 'refused' });
          continue;
        }
        const plan = planFor(engine, stage, read.stored);
        if (plan.kind === 'refused') items.push({ kind: 'refused' });
        else if (plan.kind === 'no_jury') items.push({ kind: 'no_jury', reason: plan.reason });
        else items.push({ kind: 'jury', rubric: plan.rubric.id, seats: plan.rubric.judge_types.map((seat) => providers.get(stage.judges[seat]!)) });
      }
      return judgeBatchPlan(stage.name, items);
    },
    async work(id, lease, options) {
      const read = await engine.store.read(id);
      if (read.kind === 'malformed') {
        // Made unreadable since the run selected it (SPEC §4: reported, skipped, never counted).
        options.note(malformedFileNote(id, read.reason));
        return undefined;
      }
      if (read.kind !== 'found' || read.stored.proposal['status'] !== stage.from) return undefined; // decided by someone else meanwhile
      const then = followUpOf(engine, stage, 'run');
      const judgement = await judgePanel(engine, stage, read.stored, {
        providers,
        useCache: options.useCache,
        actor: 'run',
        lease,
        ...(then ? { then } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (judgement.kind === 'done') return classify(id, judgement.result);
      // The jury has answered: commit (with the promotion) after handing the slot on.
      return { finish: async () => classify(id, await judgement.commit()) };
    },
    progressLabel: (summary) => `${summary.counts[outcomes[0]!] ?? 0} ${outcomes[0]}`,
  };
}
