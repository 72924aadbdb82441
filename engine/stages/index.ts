/** The batch work of each automatic stage kind, for the runner's one driver. */
import type { StageDef } from '../config/types.js';
import type { Engine } from '../engine.js';
import { PipelineError } from '../errors.js';
import { Providers, type ProviderSource } from '../providers/index.js';
import { runBatch, type RunOptions, type StageRun } from '../runner/driver.js';
import type { Summary } from '../runner/summary.js';
import { judgeRun } from './judge-run.js';
import { promoteRun } from './promote-run.js';
import { transformRun } from './transform-run.js';

export function stageRun(engine: Engine, stage: StageDef, providers: ProviderSource): StageRun<unknown> {
  switch (stage.kind) {
    case 'transform':
      return transformRun(engine, stage, providers) as StageRun<unknown>;
    case 'judge':
      return judgeRun(engine, stage, providers) as StageRun<unknown>;
    case 'promote':
      return promoteRun(engine, stage) as StageRun<unknown>;
    case 'review':
      throw new PipelineError('run.review', 'the review stage is run by a person: use `pipeline run review` on a terminal');
  }
}

/** Run one automatic stage's batch with the configured providers (or `providers`, in tests). */
export function runStage(engine: Engine, stage: StageDef, options: RunOptions & { providers?: ProviderSource }): Promise<Summary> {
  const providers = options.providers ?? new Providers(engine.pipeline, { env: engine.env, now: () => engine.now(), concurrency: options.concurrency });
  return runBatch(engine, stage, stageRun(engine, stage, providers), options);
}
