/**
 * Which stage a single command (`judge`, `promote`) acts for: the one named with `--stage`, else
 * the stage of that kind that takes proposals in the proposal's status. A pipeline may have
 * several stages of a kind; nothing here assumes "the" judge stage.
 */
import type { Pipeline } from '../config/load.js';
import type { StageDef } from '../config/types.js';
import { EXIT, PipelineError } from '../errors.js';
import { listWords } from '../util/suggest.js';
import { UsageError } from './args.js';

export function stageFor<K extends StageDef['kind']>(
  pipeline: Pipeline,
  kind: K,
  named: string | undefined,
  status: string,
  takes: (stage: Extract<StageDef, { kind: K }>, status: string) => boolean,
  usage: string,
): Extract<StageDef, { kind: K }> {
  const ofKind = pipeline.stages.filter((stage): stage is Extract<StageDef, { kind: K }> => stage.kind === kind);
  if (named !== undefined) {
    const stage = ofKind.find((candidate) => candidate.name === named);
    if (!stage)
      throw new UsageError(
        `unknown ${kind} stage "${named}" (expected ${listWords(ofKind.map((candidate) => candidate.name)) || `none: this pipeline has no ${kind} stage`})`,
        `usage: ${usage}`,
      );
    return stage;
  }
  if (ofKind.length === 0) throw new PipelineError('no_stage', `this pipeline has no ${kind} stage`, { exitCode: EXIT.refused });
  const taking = ofKind.filter((stage) => takes(stage, status));
  if (taking.length > 1)
    throw new UsageError(
      `${taking.length} ${kind} stages take ${status} proposals (${listWords(
        taking.map((stage) => stage.name),
        'and',
      )}): name one with --stage`,
      `usage: ${usage}`,
    );
  // None takes it: the first answers; its refusal names the status and what the stages take.
  return taking[0] ?? ofKind[0]!;
}
