/** `pipeline promote <id>`: write a judged proposal's terminal record, then stamp it. */
import { EXIT } from '../../errors.js';
import { promote, recordKind } from '../../stages/promote.js';
import type { Context } from '../context.js';
import { printOutcome } from '../print.js';
import { stageFor } from '../stage-for.js';

export async function runPromote(context: Context): Promise<number> {
  const engine = await context.engine();
  const read = await engine.read(context.parsed.positionals[0]!);
  if (!read.ok) return printOutcome(context.out, read.outcome);
  const status = String(read.stored.proposal['status']);
  const named = context.parsed.values['stage'] as string | undefined;
  const stage = stageFor(
    engine.pipeline,
    'promote',
    named,
    status,
    (candidate, at) => Object.hasOwn(candidate.outcomes, at),
    'pipeline promote <id> [--stage NAME]',
  );
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
