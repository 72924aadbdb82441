/**
 * `pipeline judge <id> --verdicts FILE|-`: verdicts produced elsewhere (e.g. by an agent's
 * subagents) go through the same gate and commit as `run judge`. An unreadable FILE is exit 1;
 * input that is not a JSON array of verdict objects leaves the proposal unjudged, exit 2.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { EXIT } from '../../errors.js';
import { followUpOf } from '../../stages/follow-up.js';
import { judgeWithVerdicts } from '../../stages/judge.js';
import { UsageError } from '../args.js';
import { stageFor } from '../stage-for.js';
import type { Context } from '../context.js';
import { printOutcome } from '../print.js';
import { readStdin } from './queue.js';

export async function runJudge(context: Context): Promise<number> {
  const engine = await context.engine();
  const source = context.parsed.values['verdicts'] as string | undefined;
  if (source === undefined) throw new UsageError('judge: --verdicts FILE|- is required', 'usage: pipeline judge <id> --verdicts FILE|-');
  const read = await engine.read(context.parsed.positionals[0]!);
  if (!read.ok) return printOutcome(context.out, read.outcome);
  const named = context.parsed.values['stage'] as string | undefined;
  const status = String(read.stored.proposal['status']);
  const stage = stageFor(engine.pipeline, 'judge', named, status, (candidate, at) => candidate.from === at, 'pipeline judge <id> --verdicts FILE|- [--stage NAME]');
  let text: string;
  try {
    text = source === '-' ? await readStdin(context) : await readFile(path.resolve(context.io.cwd, source), 'utf8');
  } catch (error) {
    context.out.refused(`cannot read the verdicts from ${source}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
    return EXIT.refused;
  }
  let input: { ok: true; value: unknown } | { ok: false; reason: string };
  try {
    input = { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    input = { ok: false, reason: `the verdicts are not valid JSON (${(error as Error).message})` };
  }
  const then = followUpOf(engine, stage, 'cli');
  const { outcome, verdict, followUp } = await judgeWithVerdicts(engine, stage, read.stored, input, { actor: 'cli', ...(then ? { then } : {}) });
  if (outcome.kind !== 'committed') return printOutcome(context.out, outcome);
  if (context.json) context.out.data(outcome.proposal);
  else context.out.line(`${outcome.id} ${outcome.from} → ${outcome.to} (${verdict?.reason ?? ''}${typeof verdict?.aggregate_score === 'number' ? `, aggregate ${verdict.aggregate_score.toFixed(3)}` : ''})`);
  for (const warning of followUp?.warnings ?? []) context.out.warn(warning);
  if (followUp?.failure) context.out.warn(`${outcome.id} was judged ${outcome.to}, but promotion failed: ${followUp.failure} (the verdict stands; run \`pipeline promote ${outcome.id}\` again)`);
  return EXIT.ok;
}
