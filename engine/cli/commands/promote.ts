/** `pipeline promote <id>`: write a judged proposal's terminal record, then stamp it. */
import { EXIT, PipelineError } from '../../errors.js';
import { promote, recordKind } from '../../stages/promote.js';
import type { Context } from '../context.js';
import { printOutcome } from '../print.js';

export async function runPromote(context: Context): Promise<number> {
  const engine = await context.engine();
  const stage = engine.pipeline.stages.find((candidate) => candidate.kind === 'promote');
  if (!stage || stage.kind !== 'promote') throw new PipelineError('no_stage', 'this pipeline has no promote stage', { exitCode: EXIT.refused });
  const read = await engine.read(context.parsed.positionals[0]!);
  if (!read.ok) return printOutcome(context.out, read.outcome);
  const result = await promote(engine, stage, read.stored, 'cli');
  for (const warning of result.warnings) context.out.warn(warning);
  if (result.outcome.kind === 'committed' && !context.json) {
    const { id, to } = result.outcome;
    const outcome = stage.outcomes[to];
    context.out.line(recordKind(stage, to) === 'recorded' ? `${id} recorded (${to}): a row in ${outcome?.append}` : `${id} promoted (${to})`);
    return EXIT.ok;
  }
  return printOutcome(context.out, result.outcome);
}
