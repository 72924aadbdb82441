/**
 * `pipeline run review`: walk the review queue on a terminal, one proposal at a time, through
 * exactly the code path of the single commands (`confirm`, `pass`, …). Without a terminal it
 * refuses and names those commands.
 */
import { createInterface } from 'node:readline/promises';
import type { ReviewStageDef } from '../config/types.js';
import type { Engine } from '../engine.js';
import { EXIT } from '../errors.js';
import { optionName, reviewCommands, runReviewCommand } from '../stages/review.js';
import { getPath } from '../util/json-path.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../util/nesting.js';
import type { Context } from './context.js';
import { printOutcome } from './print.js';
import { reviewUsage } from './review-commands.js';

/** Width of a field's label column; a value's further lines are indented to it, so no value can pass for another field. */
const LABEL_WIDTH = 16;

/** One field's value as text (Output escapes it on the way out); a value nested too deep to print says so. */
export function renderField(value: unknown): string {
  if (value === undefined || value === null) return '—';
  if (typeof value === 'string') return value.replace(/\r\n/g, '\n').replace(/\n/g, `\n${' '.repeat(LABEL_WIDTH + 2)}`);
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return renderField(value.join(', '));
  if (nestsDeeperThan(value, MAX_PRINT_DEPTH)) return `(nested more than ${MAX_PRINT_DEPTH} levels deep; not shown)`;
  return JSON.stringify(value);
}

export async function runReviewWalk(context: Context, engine: Engine, stage: ReviewStageDef): Promise<number> {
  const commands = reviewCommands(engine.pipeline).filter((command) => command.stage.name === stage.name);
  if (!context.io.interactive) {
    context.out.refused(`run ${stage.name} walks the queue on a terminal, and there is none; use the single commands:`, commands.map(reviewUsage));
    return EXIT.refused;
  }
  const from = stage.from ?? engine.pipeline.lifecycle.initial;
  const ids: string[] = [];
  for await (const entry of engine.store.index({ status: from })) if (entry.status !== null) ids.push(entry.id);
  const rl = createInterface({ input: context.io.stdin, output: context.io.stderr as NodeJS.WritableStream });
  const choices = stage.walk?.choices ?? [...commands.map((command) => ({ key: command.name[0]!, label: command.name, command: command.name, ask: Object.keys(command.def.args ?? {}) })), { key: 'q', label: 'quit', command: 'quit' }];
  const menu = choices.map((choice) => `[${choice.key}] ${choice.label ?? choice.command}`).join('  ');
  let decided = 0;
  let left = 0;
  try {
    outer: for (const [index, id] of ids.entries()) {
      const read = await engine.read(id);
      if (!read.ok || read.stored.proposal['status'] !== from) continue;
      context.out.heading(`${index + 1}/${ids.length}  ${id}`);
      for (const field of stage.walk?.show ?? [{ label: 'title', field: stage.title ?? 'id' }]) {
        context.out.note(`  ${field.label.padEnd(LABEL_WIDTH)}${renderField(getPath(read.stored.proposal, field.field))}`);
      }
      for (;;) {
        const answer = (await rl.question(`${menu} > `)).trim().toLowerCase();
        const choice = choices.find((candidate) => candidate.key === answer);
        if (!choice) continue;
        if (choice.command === 'quit') break outer;
        const command = commands.find((candidate) => candidate.name === choice.command)!;
        const args: Record<string, unknown> = {};
        for (const arg of choice.ask ?? []) {
          const schema = command.def.args?.[arg] ?? {};
          const options = Array.isArray(schema['enum']) ? ` (${(schema['enum'] as unknown[]).join('|')})` : '';
          const required = (command.def.required ?? []).includes(arg);
          const value = (await rl.question(`  ${optionName(arg).slice(2)}${options}${required ? '' : ', Enter to skip'}: `)).trim();
          if (value !== '') args[arg] = value;
        }
        const outcome = await runReviewCommand(engine, command, id, args, 'cli');
        printOutcome(context.out, outcome);
        if (outcome.kind === 'committed') decided++;
        if (outcome.kind === 'unchanged') left++;
        if (outcome.kind !== 'refused') break;
      }
    }
  } finally {
    rl.close();
  }
  const { counts } = await engine.store.counts([from]);
  context.out.line(`${stage.name}: ${decided} decided, ${left} left for later, ${counts[from] ?? 0} still ${from}`);
  return EXIT.ok;
}
