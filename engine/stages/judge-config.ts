/**
 * What the configuration says about judge stages, with no I/O and no providers: which stages
 * decide a status, the field their verdicts live in, the stage that follows them. (Rubric tuning
 * reads these without loading anything that could call a model.)
 */
import type { Pipeline } from '../config/load.js';
import type { JudgeStageDef, PromoteStageDef } from '../config/types.js';

/** The judge stages whose verdicts lead into `status` (their pass or fail event targets it). */
export function judgeStagesInto(pipeline: Pipeline, status: string): JudgeStageDef[] {
  return pipeline.stages.filter((stage): stage is JudgeStageDef => {
    if (stage.kind !== 'judge') return false;
    return pipeline.lifecycle.transitions.some(
      (t) => t.from === stage.from && t.target === status && (t.event === stage.events.pass || t.event === stage.events.fail),
    );
  });
}

/** The proposal field (and event argument) that holds a judge stage's verdict. */
export function verdictField(stage: JudgeStageDef): string {
  return stage.verdict;
}

/** The stage a judge stage hands its verdicts to (`then:`), resolved by name. */
export function thenStage(pipeline: Pipeline, stage: JudgeStageDef): PromoteStageDef | undefined {
  const then = stage.then === undefined ? undefined : pipeline.stages.find((candidate) => candidate.name === stage.then);
  return then?.kind === 'promote' ? then : undefined;
}
