/** `pipeline promote <id>`: write a judged proposal's terminal record, then stamp it. */
import { EXIT, PipelineError } from '../../errors.js';
import { promote } from '../../stages/promote.js';
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
    context.out.line(`${result.outcome.id} promoted (${result.outcome.to})`);
    return EXIT.ok;
  }
  return printOutcome(context.out, result.outcome);
}
