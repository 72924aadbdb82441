/**
 * `pipeline pool top|outcome|archive|restore|prune` (SPEC §5.8): parsing, checks of the input and
 * printing; the work is in engine/pool. Every input is checked before anything is read or written.
 */
import { EXIT } from '../../errors.js';
import type { Engine } from '../../engine.js';
import type { PoolConfig } from '../../pool/config.js';
import { pathProblem } from '../../pool/glob.js';
import { executePrune, moveProposal, planPrune, poolOf, recordOutcome, top, type PruneRun, type TopRow } from '../../pool/pool.js';
import { clampK, parseStacks, type Filters, type PruneCandidate } from '../../pool/ranking.js';
import { counterOf } from '../../pool/rows.js';
import type { Proposal } from '../../lifecycle/effects.js';
import { getPath } from '../../util/json-path.js';
import { didYouMean } from '../../util/suggest.js';
import { positiveInteger, UsageError, type OptionSpecs } from '../args.js';
import type { Context } from '../context.js';
import { printOutcome } from '../print.js';
import { malformedFileNote } from '../../outcome.js';

/** The environment variable without which `pool prune --execute` archives nothing. */
export const PRUNE_GATE = 'PIPELINE_PRUNE_EXECUTE';

interface Subcommand {
  usage: string;
  summary: string;
  options: readonly string[];
  positionals: [number, number];
  names: string[];
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  top: {
    usage: 'pipeline pool top [--k N] [--stack A,B] [--file PATH] [--task KIND] [--rebuild] [--json]',
    summary: 'the best K proposals in use for a session (score = match × recency × hit weight)',
    options: ['k', 'stack', 'file', 'task', 'rebuild'],
    positionals: [0, 0],
    names: [],
  },
  outcome: {
    usage: 'pipeline pool outcome <id> hit|miss [--consumer NAME] [--session ID] [--undo]',
    summary: 'count one outcome of a proposal in use (--undo takes one back)',
    options: ['consumer', 'session', 'undo'],
    positionals: [2, 2],
    names: ['<id>', 'hit|miss'],
  },
  archive: {
    usage: 'pipeline pool archive <id>',
    summary: 'take a proposal out of use (its pool entry is moved, not deleted)',
    options: [],
    positionals: [1, 1],
    names: ['<id>'],
  },
  restore: { usage: 'pipeline pool restore <id>', summary: 'put an archived proposal back in use', options: [], positionals: [1, 1], names: ['<id>'] },
  prune: {
    usage: `pipeline pool prune [--execute [--plan-only]] [--max-archive N] [--json]      (--execute needs ${PRUNE_GATE}=1)`,
    summary: 'list the proposals whose outcomes say they do not help; --execute archives a few',
    options: ['execute', 'plan-only', 'max-archive'],
    positionals: [0, 0],
    names: [],
  },
};

/** Every option of every subcommand (each subcommand refuses the ones that are not its own). */
export const POOL_OPTIONS: OptionSpecs = {
  k: {
    type: 'string',
    placeholder: 'N',
    description: 'top: how many to show (at most the cap, 50 shipped)',
    default: (pipeline) => String(pipeline.def.pool?.ranking?.k ?? 3),
  },
  stack: { type: 'string', placeholder: 'A,B', description: 'top: rank by the share of these stacks a proposal applies to', default: 'no filter' },
  file: { type: 'string', placeholder: 'PATH', description: "top: rank by whether a proposal's file patterns match PATH", default: 'no filter' },
  task: { type: 'string', placeholder: 'KIND', description: "top: rank by whether KIND is one of a proposal's task kinds", default: 'no filter' },
  rebuild: { type: 'boolean', description: 'top: rebuild the ranking index from the store first' },
  consumer: { type: 'string', placeholder: 'NAME', description: 'outcome: who used the proposal (recorded in the audit row)', default: 'not recorded' },
  session: { type: 'string', placeholder: 'ID', description: 'outcome: the session it was used in (recorded in the audit row)', default: 'not recorded' },
  undo: { type: 'boolean', description: 'outcome: take back one outcome of that result' },
  execute: { type: 'boolean', description: 'prune: archive the candidates (needs PIPELINE_PRUNE_EXECUTE=1)' },
  'plan-only': { type: 'boolean', description: 'prune: with --execute, say what would be archived and write nothing' },
  'max-archive': {
    type: 'string',
    placeholder: 'N',
    description: 'prune: archive at most N',
    default: (pipeline) => String(pipeline.def.pool?.prune?.max_archive ?? 3),
  },
};

export const POOL_USAGE = Object.values(SUBCOMMANDS)
  .map((sub, i) => `${i === 0 ? '' : '       '}${sub.usage}`)
  .join('\n');

export const POOL_SUMMARY = 'the pool in use: top, outcome, archive, restore, prune';

const GLOBAL_NAMES = new Set(['dir', 'store', 'json', 'help']);

function subcommandOf(context: Context): { name: string; sub: Subcommand; args: string[] } {
  const [name, ...args] = context.parsed.positionals;
  if (name === undefined) throw new UsageError('pool: missing subcommand (top, outcome, archive, restore or prune)', `usage: ${POOL_USAGE}`);
  const sub = Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
  if (!sub) throw new UsageError(`pool: unknown subcommand "${name}"`, didYouMean(name, Object.keys(SUBCOMMANDS)) ?? `usage: ${POOL_USAGE}`);
  const usage = `usage: ${sub.usage}`;
  for (const [option, value] of Object.entries(context.parsed.values)) {
    if (value !== undefined && !GLOBAL_NAMES.has(option) && !sub.options.includes(option)) throw new UsageError(`unknown option: --${option}`, usage);
  }
  const [min, max] = sub.positionals;
  if (args.length < min) throw new UsageError(`pool ${name}: missing ${sub.names[args.length] ?? 'argument'}`, usage);
  if (args.length > max) throw new UsageError(`pool ${name}: unexpected argument "${args[max]}"`, usage);
  return { name, sub, args };
}

function text(context: Context, option: string): string | undefined {
  const value = context.parsed.values[option];
  return typeof value === 'string' ? value : undefined;
}

/** A name given to an outcome (consumer, session): kept in the audit row, so short and printable. */
function label(context: Context, option: string, usage: string): string | undefined {
  const value = text(context, option);
  if (value === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  if (value.trim() === '' || value.length > 200 || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new UsageError(`--${option} must be 1 to 200 printable characters, got ${JSON.stringify(value.slice(0, 40))}`, `usage: ${usage}`);
  }
  return value;
}

/** `pipeline pool <subcommand>`: checks the subcommand, its options and arguments, then runs it; resolves to the exit code. */
export async function runPool(context: Context): Promise<number> {
  const { name, sub, args } = subcommandOf(context);
  const usage = sub.usage;
  switch (name) {
    case 'top':
      return runTop(context, usage);
    case 'outcome': {
      const consumer = label(context, 'consumer', usage);
      const session = label(context, 'session', usage);
      const undo = context.parsed.values['undo'] === true;
      const { engine, pool } = await open(context);
      const outcome = await recordOutcome(engine, pool, args[0]!, args[1]!, { undo, ...(consumer ? { consumer } : {}), ...(session ? { session } : {}) });
      if (outcome.kind !== 'committed' || context.json) return printOutcome(context.out, outcome);
      const hits = counterOf(outcome.proposal, pool.fields.hits);
      const misses = counterOf(outcome.proposal, pool.fields.misses);
      const counts = `${hits} ${hits === 1 ? 'hit' : 'hits'}, ${misses} ${misses === 1 ? 'miss' : 'misses'}`;
      context.out.line(`${outcome.id} ${args[1]} ${undo ? 'taken back' : 'recorded'}: ${counts}`);
      return EXIT.ok;
    }
    case 'archive':
    case 'restore': {
      const { engine, pool } = await open(context);
      return printOutcome(context.out, await moveProposal(engine, pool, args[0]!, name));
    }
    default:
      return runPrune(context, usage);
  }
}

async function open(context: Context): Promise<{ engine: Engine; pool: PoolConfig }> {
  const engine = await context.engine();
  const pool = poolOf(engine.pipeline);
  if (!pool) throw new UsageError('this pipeline declares no pool: add a pool: section to pipeline.yaml (see the shipped one)');
  return { engine, pool };
}

function reportMalformed(context: Context, ids: readonly string[]): void {
  for (const id of new Set(ids)) context.out.warn(malformedFileNote(id));
}

function titleOf(proposal: Proposal | undefined, pool: PoolConfig): string {
  const value = proposal ? getPath(proposal, pool.fields.title) : undefined;
  return typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : '';
}

async function runTop(context: Context, usage: string): Promise<number> {
  const filters: Filters = {};
  const stack = text(context, 'stack');
  if (stack !== undefined) {
    const names = parseStacks(stack);
    if (names.length === 0) throw new UsageError(`--stack needs at least one name, got ${JSON.stringify(stack)}`, `usage: ${usage}`);
    filters.stack = names;
  }
  const file = text(context, 'file');
  if (file !== undefined) {
    const problem = pathProblem(file);
    if (problem) throw new UsageError(`--file ${JSON.stringify(file)}: ${problem}`, `usage: ${usage}`);
    filters.file = file;
  }
  const task = text(context, 'task');
  if (task !== undefined) {
    if (task.trim() === '') throw new UsageError('--task needs a task kind, got ""', `usage: ${usage}`);
    filters.task = task;
  }
  const asked = positiveInteger(context.parsed.values['k'], 'k', usage);
  const { engine, pool } = await open(context);
  const { k, clamped } = clampK(asked ?? pool.ranking.k, pool.ranking.maxK);
  if (clamped) context.out.warn(`--k ${asked} is more than ${pool.ranking.maxK}; showing at most ${pool.ranking.maxK}`);
  // One instant for every row: recency is comparable across the ranking.
  const now = engine.clock().getTime();
  const result = await top(engine, pool, filters, k, now, { rebuild: context.parsed.values['rebuild'] === true });
  reportMalformed(context, result.malformed);
  if (context.json) {
    context.out.dataArray(result.rows.map((row) => topJson(row, pool)));
    return EXIT.ok;
  }
  for (const { scored, proposal } of result.rows) {
    context.out.line(`${scored.row.id}  ${scored.score.toFixed(3)}  ${scored.row.hits}/${scored.row.misses}  ${titleOf(proposal, pool)}`.trimEnd());
  }
  if (result.rows.length === 0) context.out.note('no proposal in use matches');
  return EXIT.ok;
}

/** A `pool top --json` row: the fixed keys of SPEC §5.8, then the declared `show` keys. */
export function topJson({ scored, proposal }: TopRow, pool: PoolConfig): Record<string, unknown> {
  const row: Record<string, unknown> = {
    id: scored.row.id,
    score: scored.score,
    match: scored.match,
    recency: scored.recency,
    hit_weight: scored.hitWeight,
    hit_count: scored.row.hits,
    hit_rate: scored.hitRate,
    miss_count: scored.row.misses,
  };
  for (const [key, path] of pool.show) row[key] = getPath(proposal, path) ?? null;
  return row;
}

function candidateJson({ row, hitRate }: PruneCandidate): Record<string, unknown> {
  return { id: row.id, hit_count: row.hits, miss_count: row.misses, hit_rate: hitRate };
}

async function runPrune(context: Context, usage: string): Promise<number> {
  const execute = context.parsed.values['execute'] === true;
  const planOnly = context.parsed.values['plan-only'] === true;
  if (planOnly && !execute) throw new UsageError('--plan-only goes with --execute (without --execute, prune is a dry run already)', `usage: ${usage}`);
  const asked = positiveInteger(context.parsed.values['max-archive'], 'max-archive', usage);
  if (execute && context.io.env[PRUNE_GATE] !== '1') {
    context.out.refused(`pool prune --execute archives proposals, so it runs only with ${PRUNE_GATE}=1 in the environment; nothing was written`);
    return EXIT.refused;
  }
  const { engine, pool } = await open(context);
  const maxArchive = asked ?? pool.prune.maxArchive;
  let run: PruneRun;
  if (execute) {
    run = await executePrune(engine, pool, maxArchive, { planOnly });
  } else {
    const { plan, index } = await planPrune(engine, pool);
    await index.save();
    run = { ...plan, archived: [], refused: [] };
  }
  reportMalformed(context, run.malformed);
  for (const refusal of run.refused) context.out.refused(refusal.message);
  if (context.json) {
    context.out.data({ candidates: run.candidates.map(candidateJson), archived: run.archived });
  } else {
    for (const candidate of run.candidates) {
      const { row, hitRate } = candidate;
      context.out.line(`${row.id}  ${hitRate.toFixed(3)}  ${row.hits}/${row.misses}  ${titleOf(run.proposals.get(row.id), pool)}`.trimEnd());
    }
    for (const id of run.archived) context.out.line(`${planOnly ? 'would archive' : 'archived'} ${id}`);
  }
  const count = `${run.candidates.length} ${run.candidates.length === 1 ? 'candidate' : 'candidates'}`;
  if (!execute) context.out.note(`${count}; a dry run, nothing was archived (${PRUNE_GATE}=1 pipeline pool prune --execute archives up to ${maxArchive})`);
  else if (planOnly) context.out.note(`${count}; --plan-only: nothing was archived or written`);
  else context.out.note(`${count}; archived ${run.archived.length}; receipt: ${engine.store.location}/${pool.prune.receipts}/${run.receipt}`);
  return run.refused.length ? EXIT.refused : EXIT.ok;
}
