/** Queue commands: status, list, show, propose. */
import { EXIT } from '../../errors.js';
import type { AuditRow } from '../../store/types.js';
import { getPath } from '../../util/json-path.js';
import { loadYaml } from '../../util/load-yaml.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../../util/nesting.js';
import { tidyNumbers } from '../../util/numbers.js';
import { didYouMean, listWords } from '../../util/suggest.js';
import { UsageError } from '../args.js';
import type { Context } from '../context.js';
import { titleField } from '../../viz/snapshot.js';
import { matches, parseWhere, rowSuffix } from '../list-filter.js';
import { printOutcome } from '../print.js';
import { readInputText } from '../read-input.js';
import { malformedFileNote } from '../../outcome.js';

function reportMalformed(context: Context, ids: readonly string[]): void {
  for (const id of ids) context.out.warn(malformedFileNote(id));
}

function reportTooDeep(context: Context, ids: readonly string[]): void {
  for (const id of ids) {
    context.out.warn(`${id}: the proposal nests more than ${MAX_PRINT_DEPTH} levels deep and cannot be printed — skipped, left as it is`);
  }
}

export async function runStatus(context: Context): Promise<number> {
  const engine = await context.readEngine();
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

const LIST_USAGE = 'pipeline list [--state S|all] [--where FIELD=VALUE …] [--grep TEXT] [--json]';

/** How many proposals `list` reads between two turns of the event loop. */
const YIELD_EVERY = 256;

export async function runList(context: Context): Promise<number> {
  const engine = await context.readEngine();
  const { pipeline } = engine;
  const { states, initial } = pipeline.lifecycle;
  const { values } = context.parsed;
  const state = (values['state'] as string | undefined) ?? initial;
  // `all` means every state, unless the lifecycle has a state of that name.
  const every = state === 'all' && !states.includes('all');
  if (!every && !states.includes(state)) {
    const hint = didYouMean(state, [...states, 'all']);
    throw new UsageError(`unknown state "${state}" (expected ${listWords([...states, 'all'])})${hint ? `; ${hint}` : ''}`, `usage: ${LIST_USAGE}`);
  }
  const where = parseWhere((values['where'] as string[] | undefined) ?? [], LIST_USAGE);
  const title = titleField(pipeline.stages);
  const grepText = values['grep'] as string | undefined;
  if (grepText !== undefined && title === undefined) {
    throw new UsageError('--grep searches the title field, and this pipeline declares none (title: in its review stage)', `usage: ${LIST_USAGE}`);
  }
  const grep = grepText !== undefined && title !== undefined ? { field: title, text: grepText } : undefined;
  // Printed as the store yields (in id order), so a listing holds one batch at a time, not every
  // matching proposal: the messages about files left out follow the results.
  const malformed: string[] = [];
  const tooDeep: string[] = [];
  const array = context.json ? context.out.arrayWriter() : undefined;
  let read = 0;
  for await (const listed of engine.store.list(every ? {} : { status: state })) {
    // Never ahead of the reader: what stdout holds waits for it, so a slow reader (`| less`) costs
    // no memory and one gone (`| head`) ends the listing at once. The store's reads never leave
    // the event loop a turn otherwise: it gets one now and then, for the pipe's news.
    const drained = context.io.drained?.();
    if (drained) await drained;
    else if (++read % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if (listed.kind !== 'found') malformed.push(listed.id);
    else if (!matches(listed.stored.proposal, where, grep)) continue;
    else if (array) {
      if (!array.push(listed.stored.proposal)) tooDeep.push(listed.stored.id);
    } else {
      const { id, proposal } = listed.stored;
      const text = title ? getPath(proposal, title) : undefined;
      const suffix = rowSuffix(pipeline, proposal, every);
      context.out.line(`${id}  ${typeof text === 'string' ? text.replace(/\s+/g, ' ') : ''}${suffix ? `  ${suffix}` : ''}`.trimEnd());
    }
  }
  array?.end();
  reportMalformed(context, malformed);
  reportTooDeep(context, tooDeep);
  return EXIT.ok;
}

/** One audit row as a line: when, what, from → to, by whom, with its arguments. */
function historyLine(row: AuditRow): string {
  const args = row.args ? `  ${JSON.stringify(row.args)}` : '';
  const repaired = row.repaired ? `  (added at ${row.repaired_at ?? '?'} to finish an interrupted commit)` : '';
  return `  ${row.at}  ${row.event}  ${row.from ?? '—'} → ${row.to}  (${row.stage}, ${row.actor})${args}${repaired}`;
}

export async function runShow(context: Context): Promise<number> {
  const engine = await context.readEngine();
  const read = await engine.read(context.parsed.positionals[0]!);
  if (!read.ok) return printOutcome(context.out, read.outcome);
  const { id, proposal } = read.stored;
  if (nestsDeeperThan(proposal, MAX_PRINT_DEPTH)) {
    context.out.refused(`${id}: the proposal nests more than ${MAX_PRINT_DEPTH} levels deep and cannot be shown; it is left as it is`);
    return EXIT.refused;
  }
  const history: AuditRow[] = [];
  if (context.parsed.values['history'] === true) for await (const row of engine.store.audit({ id })) history.push(row);
  if (context.json) {
    context.out.data(context.parsed.values['history'] === true ? { proposal, history } : proposal);
    return EXIT.ok;
  }
  // Text is for reading: numbers without float noise (0.82, not 0.8200000000000001).
  const { stringify } = await loadYaml();
  context.out.line(stringify(tidyNumbers(proposal), { lineWidth: 100 }).trimEnd());
  if (context.parsed.values['history'] === true) {
    context.out.line('');
    context.out.line(history.length ? 'history (oldest first):' : 'history: none recorded (the file was not written by the engine)');
    for (const row of history) context.out.line(historyLine(row));
  }
  return EXIT.ok;
}

/** Read a JSON document from FILE, or stdin for `-` or no argument, bounded in size (MAX_INPUT_BYTES). */
export async function readJsonInput(
  context: Context,
  source: string | undefined,
  what: string,
): Promise<{ ok: true; value: unknown } | { ok: false; message: string }> {
  const read = await readInputText(context, source, what);
  if (!read.ok) return read;
  try {
    return { ok: true, value: JSON.parse(read.text) as unknown };
  } catch (error) {
    return { ok: false, message: `${what} in ${source === undefined || source === '-' ? 'stdin' : source} is not valid JSON: ${(error as Error).message}` };
  }
}

export async function runPropose(context: Context): Promise<number> {
  const source = context.parsed.positionals[0];
  // Waiting silently for a terminal to send JSON looks like a hang.
  if (source === undefined && context.io.stdin.isTTY) {
    const hint = 'give a FILE, pipe the JSON in (… | pipeline propose -), or write - to type it here and end it with Ctrl-D';
    throw new UsageError('propose: no FILE given, and stdin is a terminal', hint);
  }
  const engine = await context.engine();
  if (source === '-' && context.io.stdin.isTTY) context.out.note('reading the proposal as JSON from the terminal; end it with Ctrl-D');
  const input = await readJsonInput(context, source, 'the proposal');
  if (!input.ok) {
    context.out.refused(input.message);
    return EXIT.refused;
  }
  const outcome = await engine.propose(input.value, { stage: 'propose', actor: 'cli' });
  return printOutcome(context.out, outcome);
}
