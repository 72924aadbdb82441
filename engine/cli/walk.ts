/**
 * `pipeline run review`: walk the review queue on a terminal, one proposal at a time, through
 * exactly the code path of the single commands (`confirm`, `pass`, …). Without a terminal it
 * refuses and names those commands.
 *
 * A person answers with a key and Enter (as `git add -p` does: a pasted or mistyped line never
 * acts on its own). A wrong answer — a key that is no choice, a value an argument does not take —
 * is refused at once with the allowed answers and asked again. Ctrl-D quits cleanly (exit 0) and
 * Ctrl-C stops (exit 130); both print the summary so far, and whatever was decided stays decided.
 */
import type { ReviewStageDef } from '../config/types.js';
import type { Engine } from '../engine.js';
import { EXIT } from '../errors.js';
import { checkArgument, optionName, reviewCommands, runReviewCommand, type ReviewCommand } from '../stages/review.js';
import { getPath } from '../util/json-path.js';
import { listWords } from '../util/suggest.js';
import { wrapHanging } from '../util/wrap.js';
import type { Context } from './context.js';
import { displayField } from './display.js';
import { printOutcome } from './print.js';
import { type Answer, Prompter } from './prompter.js';
import { reviewUsage } from './review-commands.js';

/** Width of a field's label column; a value's further lines are indented past it, so no value can pass for another field. */
const LABEL_WIDTH = 16;
const INDENT = LABEL_WIDTH + 2;

/** One field's line(s): the label, then the value wrapped at word boundaries under its column. */
export function renderFieldLine(label: string, text: string, columns: number): string {
  return `  ${label.padEnd(LABEL_WIDTH)}${wrapHanging(text.replace(/\r\n/g, '\n'), Math.max(columns, INDENT + 20), INDENT)}`;
}

interface Choice {
  key: string;
  label?: string;
  command: string;
  ask?: string[];
}

/** Ask for one argument until the answer is acceptable; how the input ended, when it did. */
async function askArgument(context: Context, prompter: Prompter, engine: Engine, command: ReviewCommand, arg: string): Promise<{ value?: string } | Answer> {
  const schema = command.def.args?.[arg] ?? {};
  const allowed = Array.isArray(schema['enum']) ? (schema['enum'] as unknown[]).map(String) : undefined;
  const required = (command.def.required ?? []).includes(arg);
  const question = `  ${optionName(arg).slice(2)}${allowed ? ` (${allowed.join('|')})` : ''}${required ? '' : ', Enter to skip'}: `;
  for (;;) {
    const answer = await prompter.ask(question);
    if (answer.kind !== 'line') return answer;
    const value = answer.text.trim() === '' ? undefined : answer.text.trim();
    if (value === undefined && !required) return {};
    const missing = `${arg.replace(/_/g, ' ')} is required${allowed ? `: answer ${listWords(allowed)}` : ''}`;
    const problem = value === undefined ? missing : checkArgument(engine, command, arg, value);
    if (problem === undefined) return { value: value! };
    context.out.note(`  ${problem}; try again`);
  }
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
  const choices: Choice[] = stage.walk?.choices ?? [
    ...commands.map((command) => ({ key: command.name[0]!, label: command.name, command: command.name, ask: Object.keys(command.def.args ?? {}) })),
    { key: 'q', label: 'quit', command: 'quit' },
  ];
  const keys = choices.map((choice) => choice.key);
  const menu = `${choices.map((choice) => `[${choice.key}] ${choice.label ?? choice.command}`).join('  ')}  (key, then Enter) > `;
  // A terminal that reports no size (0, as a bare pseudo-terminal does) is taken as 80 columns.
  const columns = (context.io.stderr as { columns?: number }).columns || 80;

  const prompter = new Prompter(context);
  const removeHandler = context.io.onInterrupt(() => prompter.interrupt());
  let decided = 0;
  let deferred = 0;
  let gone = 0;
  let ended: 'eof' | 'interrupt' | 'quit' | undefined;
  try {
    outer: for (const [index, id] of ids.entries()) {
      const read = await engine.read(id);
      if (!read.ok || read.stored.proposal['status'] !== from) {
        gone++; // decided elsewhere meanwhile
        continue;
      }
      context.out.heading(`${index + 1}/${ids.length}  ${id}`);
      for (const field of stage.walk?.show ?? [{ label: 'title', field: stage.title ?? 'id' }]) {
        context.out.note(renderFieldLine(field.label, displayField(getPath(read.stored.proposal, field.field), field.format), columns));
      }
      for (;;) {
        const answer = await prompter.ask(menu);
        if (answer.kind !== 'line') {
          ended = answer.kind;
          break outer;
        }
        const typed = answer.text.trim().toLowerCase();
        const choice = choices.find((candidate) => candidate.key === typed || (candidate.label ?? candidate.command) === typed);
        if (!choice) {
          context.out.note(`  ${typed === '' ? 'no answer' : `"${answer.text.trim()}" is not a choice`}: answer ${listWords(keys)}, then Enter`);
          continue;
        }
        if (choice.command === 'quit') {
          ended = 'quit';
          break outer;
        }
        const command = commands.find((candidate) => candidate.name === choice.command)!;
        const args: Record<string, unknown> = {};
        for (const arg of choice.ask ?? []) {
          const got = await askArgument(context, prompter, engine, command, arg);
          if ('kind' in got) {
            ended = got.kind === 'line' ? 'eof' : got.kind;
            break outer;
          }
          if (got.value !== undefined) args[arg] = got.value;
        }
        const outcome = await runReviewCommand(engine, command, id, args, 'cli');
        printOutcome(context.out, outcome);
        if (outcome.kind === 'committed') decided++;
        if (outcome.kind === 'unchanged') deferred++;
        if (outcome.kind !== 'refused') break;
        // Refused because someone else decided it meanwhile: asking again could never succeed.
        const again = await engine.read(id);
        if (!again.ok || again.stored.proposal['status'] !== from) {
          gone++;
          break;
        }
      }
    }
  } finally {
    removeHandler();
    prompter.close();
  }
  if (ended === 'interrupt') context.out.note('\ninterrupted: what was decided stays decided');
  if (ended === 'eof') context.out.note('\nend of input: stopping here');
  // Each proposal is counted once: decided, left for later, changed elsewhere, or not reached.
  const notReached = ids.length - decided - deferred - gone;
  const elsewhere = gone ? `, ${gone} changed elsewhere meanwhile` : '';
  const interrupted = ended === 'interrupt' ? ' (interrupted)' : '';
  context.out.line(`${stage.name}: ${decided} decided, ${deferred} left for later, ${notReached} not reached${elsewhere}${interrupted}`);
  return ended === 'interrupt' ? EXIT.interrupted : EXIT.ok;
}
