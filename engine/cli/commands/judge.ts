/**
 * `pipeline judge <id> --verdicts FILE|-`: verdicts produced elsewhere (e.g. by an agent's
 * subagents) go through the same gate and commit as `run judge`. An unreadable FILE is exit 1;
 * input that is not a JSON array of verdict objects leaves the proposal unjudged, exit 2.
 */
import type { Pipeline } from '../../config/load.js';
import type { JudgeStageDef } from '../../config/types.js';
import { EXIT } from '../../errors.js';
import { VERDICT_FIELDS } from '../../jury/verdict.js';
import { table } from '../layout.js';
import { followUpOf } from '../../stages/follow-up.js';
import { judgeWithVerdicts, thenStage } from '../../stages/judge.js';
import { recordKind } from '../../stages/promote.js';
import { UsageError } from '../args.js';
import { stageFor } from '../stage-for.js';
import type { Context } from '../context.js';
import { printOutcome } from '../print.js';
import { readInputText } from '../read-input.js';

export async function runJudge(context: Context): Promise<number> {
  const engine = await context.engine();
  const source = context.parsed.values['verdicts'] as string | undefined;
  if (source === undefined) throw new UsageError('judge: --verdicts FILE|- is required', 'usage: pipeline judge <id> --verdicts FILE|-');
  const read = await engine.read(context.parsed.positionals[0]!);
  if (!read.ok) return printOutcome(context.out, read.outcome);
  const named = context.parsed.values['stage'] as string | undefined;
  const status = String(read.stored.proposal['status']);
  const stage = stageFor(
    engine.pipeline,
    'judge',
    named,
    status,
    (candidate, at) => candidate.from === at,
    'pipeline judge <id> --verdicts FILE|- [--stage NAME]',
  );
  const verdicts = await readInputText(context, source, '--verdicts input');
  if (!verdicts.ok) {
    // A refusal names the proposal and its status (SPEC §7), as every other refusal of the command does.
    context.out.refused(`${read.stored.id} (${status}): ${verdicts.message}; nothing was written`);
    return EXIT.refused;
  }
  let input: { ok: true; value: unknown } | { ok: false; reason: string };
  try {
    input = { ok: true, value: JSON.parse(verdicts.text) as unknown };
  } catch (error) {
    input = { ok: false, reason: `the verdicts are not valid JSON (${(error as Error).message})` };
  }
  const then = followUpOf(engine, stage, 'cli');
  const { outcome, verdict, followUp } = await judgeWithVerdicts(engine, stage, read.stored, input, { actor: 'cli', ...(then ? { then } : {}) });
  if (outcome.kind !== 'committed') return printOutcome(context.out, outcome);
  if (context.json) context.out.data(outcome.proposal);
  else {
    const floor = verdict?.failed_criterion ? `: ${verdict.failed_criterion}` : '';
    const score = typeof verdict?.aggregate_score === 'number' ? `, aggregate ${verdict.aggregate_score.toFixed(3)}` : '';
    const promoteStage = followUp?.promoted ? thenStage(engine.pipeline, stage) : undefined;
    const then = promoteStage ? `; ${recordKind(promoteStage, outcome.to)} at once (${promoteStage.name})` : '';
    context.out.line(`${outcome.id} ${outcome.from} → ${outcome.to} (${verdict?.reason ?? ''}${floor}${score})${then}`);
  }
  for (const warning of followUp?.warnings ?? []) context.out.warn(warning);
  if (followUp?.failure)
    context.out.warn(
      `${outcome.id} was judged ${outcome.to}, but promotion failed: ${followUp.failure} (the verdict stands; run \`pipeline promote ${outcome.id}\` again)`,
    );
  return EXIT.ok;
}

/**
 * The verdict format for `judge --help`: the field rules `checkVerdict` enforces, an example built
 * from a rubric of the configuration, and which rubric each proposal gets.
 */
export function verdictFormatHelp(pipeline: Pipeline | undefined): string[] {
  const judges = pipeline?.stages.filter((candidate): candidate is JudgeStageDef => candidate.kind === 'judge') ?? [];
  const targets = judges.flatMap((stage) => Object.values(stage.rubric.map).filter((target): target is string => typeof target === 'string'));
  const rubric = targets.map((target) => pipeline!.rubrics.get(target)).find((found) => found !== undefined);
  const seats = rubric?.judge_types ?? ['standard'];
  const scores = (rubric?.criteria ?? [{ name: 'accuracy' }]).map((criterion) => `"${criterion.name}": 0.8`).join(', ');
  const example = seats.map((seat, index) => {
    const comma = index < seats.length - 1 ? ',' : '';
    const lines = [`    {"judge_type": "${seat}", "score": 0.8, "passed": true,`, `     "criterion_scores": {${scores}},`];
    return [...lines, `     "feedback_summary": "one or two sentences"}${comma}`].join('\n');
  });
  const lines = ["verdicts: a JSON array with one object per seat of the proposal's panel, e.g.", '  [', ...example, '  ]'];
  lines.push(...table(VERDICT_FIELDS.map(([field, rule]) => [field, rule] as const)));
  lines.push('Any other key is dropped. Input that is not such an array leaves the proposal unjudged (exit 2).');
  for (const stage of judges) {
    const rows = Object.entries(stage.rubric.map).map(([value, target]) => {
      if (typeof target !== 'string') return [value, `no jury (${target.none}): judged at once, no verdicts needed`] as const;
      const found = pipeline!.rubrics.get(target);
      const floors = found?.criteria.map((criterion) => (criterion.min_pass === undefined ? criterion.name : `${criterion.name}≥${criterion.min_pass}`)) ?? [];
      return [value, `${target}: panel ${found?.judge_types.join(', ') ?? '?'}; criteria ${floors.join(', ')}`] as const;
    });
    lines.push('', judges.length > 1 ? `the rubric of ${stage.name}, by ${stage.rubric.by}:` : `the rubric, by ${stage.rubric.by}:`, ...table(rows));
  }
  return lines;
}
