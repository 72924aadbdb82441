/**
 * A judge stage's `then:` — the promotion that follows a verdict — planned on the judged
 * proposal and added to the verdict's own commit, so the verdict, the pool entry (or ledger row)
 * and the stamp land together. A promotion that cannot be made is reported and the verdict is
 * committed alone (SPEC §5.4: a promotion failure leaves the verdict and the exit code as they are).
 */
import type { JudgeStageDef } from '../config/types.js';
import type { Actor, Engine, Extend } from '../engine.js';
import { thenStage, type FollowUp } from './judge.js';
import { planPromotion } from './promote.js';

export function followUpOf(engine: Engine, stage: JudgeStageDef, actor: Actor): { extend: Extend; report: FollowUp } | undefined {
  const then = thenStage(engine.pipeline, stage);
  if (!then) return undefined;
  const report: FollowUp = { stage: then.name, promoted: false, warnings: [] };
  const extend: Extend = async (change) => {
    let plan;
    try {
      plan = await planPromotion(engine, then, change.id, change.next, actor, { judgedNow: true });
    } catch (error) {
      report.failure = error instanceof Error ? error.message : String(error);
      return undefined;
    }
    report.warnings.push(...plan.warnings);
    if (!plan.ok) {
      if (plan.outcome.kind === 'refused') report.failure = plan.outcome.message;
      return undefined;
    }
    const { promotion } = plan;
    report.promoted = true;
    return {
      ...change,
      next: promotion.next,
      audit: [...change.audit, promotion.audit],
      ledger: [...(change.ledger ?? []), ...promotion.ledger],
      entries: [...(change.entries ?? []), ...promotion.entries],
    };
  };
  return { extend, report };
}
