/** Queue commands: status, list, show, propose. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { EXIT } from '../../errors.js';
import type { Stored } from '../../store/types.js';
import { getPath } from '../../util/json-path.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../../util/nesting.js';
import { listWords } from '../../util/suggest.js';
import { UsageError } from '../args.js';
import type { Context } from '../context.js';
import { printOutcome } from '../print.js';

function reportMalformed(context: Context, ids: readonly string[]): void {
  for (const id of ids) context.out.warn(`${id}: the proposal file is empty, truncated or not a JSON object — skipped, left as it is`);
}

function reportTooDeep(context: Context, ids: readonly string[]): void {
  for (const id of ids) {
    context.out.warn(`${id}: the proposal nests more than ${MAX_PRINT_DEPTH} levels deep and cannot be printed — skipped, left as it is`);
  }
}

export async function runStatus(context: Context): Promise<number> {
  const engine = await context.engine();
  const states = engine.pipeline.lifecycle.states;
  const { counts, malformed, unknown } = await engine.store.counts(states);
  reportMalformed(context, malformed);
  // The store's tally has no prototype: a status named `__proto__` or `constructor` is a name.
  for (const [status, count] of Object.entries(unknown)) {
    const has = count === 1 ? 'proposal has' : 'proposals have';
    context.out.warn(`${count} ${has} status ${JSON.stringify(status)}, which the lifecycle does not know — not counted`);
  }
  const countOf = (state: string): number => (Object.hasOwn(counts, state) ? (counts[state] ?? 0) : 0);
  if (context.json) context.out.data(Object.fromEntries(states.map((state) => [state, countOf(state)])));
  else for (const state of states) context.out.line(`${state} ${countOf(state)}`);
  return EXIT.ok;
}

/** The field `list` shows as a proposal's title (the review stage's `title`). */
function titleField(stages: { kind: string; title?: string }[]): string | undefined {
  return stages.find((stage) => stage.kind === 'review' && stage.title)?.title;
}

export async function runList(context: Context): Promise<number> {
  const engine = await context.engine();
  const { states, initial } = engine.pipeline.lifecycle;
  const state = (context.parsed.values['state'] as string | undefined) ?? initial;
  if (!states.includes(state)) throw new UsageError(`unknown state "${state}" (expected ${listWords(states)})`, 'usage: pipeline list [--state S] [--json]');
  const items: Stored[] = [];
  const malformed: string[] = [];
  for await (const listed of engine.store.list({ status: state })) {
    if (listed.kind === 'found') items.push(listed.stored);
    else malformed.push(listed.id);
  }
  reportMalformed(context, malformed);
  if (context.json) {
    const left = context.out.dataArray(items.map((item) => item.proposal));
    reportTooDeep(context, left.map((index) => items[index]!.id));
    return EXIT.ok;
  }
  const field = titleField(engine.pipeline.stages as { kind: string; title?: string }[]);
  for (const item of items) {
    const title = field ? getPath(item.proposal, field) : undefined;
    context.out.line(`${item.id}  ${typeof title === 'string' ? title.replace(/\s+/g, ' ') : ''}`.trimEnd());
  }
  return EXIT.ok;
}

export async function runShow(context: Context): Promise<number> {
  const engine = await context.engine();
  const id = context.parsed.positionals[0]!;
  const read = await engine.read(id);
  if (!read.ok) return printOutcome(context.out, read.outcome);
  const { proposal } = read.stored;
  if (nestsDeeperThan(proposal, MAX_PRINT_DEPTH)) {
    context.out.refused(`${read.stored.id}: the proposal nests more than ${MAX_PRINT_DEPTH} levels deep and cannot be shown; it is left as it is`);
    return EXIT.refused;
  }
  if (context.json) context.out.data(proposal);
  else context.out.line(stringify(proposal, { lineWidth: 100 }).trimEnd());
  return EXIT.ok;
}

/** Read a JSON document from FILE, or stdin for `-` or no argument. */
export async function readJsonInput(context: Context, source: string | undefined, what: string): Promise<{ ok: true; value: unknown } | { ok: false; message: string }> {
  let text: string;
  try {
    text = source === undefined || source === '-' ? await readStdin(context) : await readFile(path.resolve(context.io.cwd, source), 'utf8');
  } catch (error) {
    return { ok: false, message: `cannot read ${source ?? 'stdin'}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: `${what} in ${source === undefined || source === '-' ? 'stdin' : source} is not valid JSON: ${(error as Error).message}` };
  }
}

export async function readStdin(context: Context): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of context.io.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8');
}

export async function runPropose(context: Context): Promise<number> {
  const engine = await context.engine();
  const input = await readJsonInput(context, context.parsed.positionals[0], 'the proposal');
  if (!input.ok) {
    context.out.refused(input.message);
    return EXIT.refused;
  }
  const outcome = await engine.propose(input.value, { stage: 'propose', actor: 'cli' });
  return printOutcome(context.out, outcome);
}
