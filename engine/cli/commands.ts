/**
 * The built-in commands: name, usage line, options and the function that runs them. A spec also
 * carries its help — what each option does, its default, the values it accepts (read from the
 * configuration where they live there) and an example — so `help COMMAND` is rendered from the
 * same data the parser uses and cannot describe an option that does not exist.
 */
import type { Pipeline } from '../config/load.js';
import { EXAMPLE_ID, type ArgumentHelp, type CommandSpec } from './command-spec.js';
import { runInit } from './commands/init.js';
import { runJudge, verdictFormatHelp } from './commands/judge.js';
import { runList, runPropose, runShow, runStatus } from './commands/queue.js';
import { POOL_OPTIONS, POOL_SUMMARY, POOL_USAGE, runPool } from './commands/pool.js';
import { runPromote } from './commands/promote.js';
import { runRescore } from './commands/rescore.js';
import { runRun } from './commands/run.js';
import { runStore } from './commands/store.js';
import { runValidate } from './commands/validate.js';
import { VIZ_FORMATS } from '../viz/formats.js';
import { DEFAULT_PORT, runViz } from './commands/viz.js';

/** `<id>` also takes the pipeline's key field (SPEC §7). */
const ID_ARGUMENT: ArgumentHelp = {
  name: '<id>',
  description: 'a proposal id (a ULID)',
  more: (pipeline) => `, or the ${pipeline.def.proposal.key} the proposal was made from`,
};

const stageNames = (pipeline: Pipeline) => pipeline.stages.map((stage) => stage.name);
const judgeStageNames = (pipeline: Pipeline) => pipeline.stages.flatMap((stage) => (stage.kind === 'judge' ? [stage.name] : []));
const promoteStageNames = (pipeline: Pipeline) => pipeline.stages.flatMap((stage) => (stage.kind === 'promote' ? [stage.name] : []));

export const BUILT_INS: CommandSpec[] = [
  {
    name: 'validate',
    usage: 'pipeline validate [--json]',
    summary: 'check all configuration',
    options: {},
    positionals: [0, 0],
    example: 'pipeline validate',
    details: () => ['Every file against its schema, then every cross-reference; prints `ok` and what it loaded, or every issue (file:line:col) and exits 1.'],
    run: runValidate,
  },
  {
    name: 'status',
    usage: 'pipeline status [--json]',
    summary: 'counts for every state of the machine, zeros included',
    options: {},
    positionals: [0, 0],
    example: 'pipeline status --json',
    run: runStatus,
  },
  {
    name: 'list',
    usage: 'pipeline list [--state S|all] [--where FIELD=VALUE …] [--grep TEXT] [--json]',
    summary: 'proposals in a state, by id (default: the initial state)',
    options: {
      state: {
        type: 'string',
        placeholder: 'S',
        description: 'the state to list; all lists every state',
        default: (pipeline) => pipeline.lifecycle.initial,
        allowed: (pipeline) => [...pipeline.lifecycle.states, 'all'],
      },
      where: {
        type: 'string',
        multiple: true,
        placeholder: 'FIELD=VALUE',
        description: 'only proposals whose FIELD (a dotted path) equals VALUE; repeatable, all must hold',
        default: 'no filter',
      },
      grep: { type: 'string', placeholder: 'TEXT', description: 'only proposals whose title contains TEXT, in any case', default: 'no filter' },
    },
    positionals: [0, 0],
    example: (pipeline) => {
      const { states, initial } = pipeline.lifecycle;
      return `pipeline list --state ${states.find((state) => state !== initial) ?? initial} --grep timeout`;
    },
    run: runList,
  },
  {
    name: 'show',
    usage: 'pipeline show <id> [--history] [--json]',
    summary: 'one proposal',
    options: { history: { type: 'boolean', description: 'also show its audit rows, oldest first (--json: {proposal, history})' } },
    positionals: [1, 1],
    positionalNames: ['<id>'],
    arguments: [ID_ARGUMENT],
    example: `pipeline show ${EXAMPLE_ID} --history`,
    run: runShow,
  },
  {
    name: 'propose',
    usage: 'pipeline propose [FILE|-]',
    summary: 'create a pending proposal; prints the id',
    options: {},
    positionals: [0, 1],
    arguments: [
      {
        name: 'FILE|-',
        description: 'a JSON object to propose; - reads it from stdin',
        more: (pipeline) => {
          const { key, payload, schema } = pipeline.def.proposal;
          return `: {${key}, ${payload}}, the ${payload} valid against the ${schema} schema`;
        },
        default: 'stdin, when it is not a terminal',
      },
    ],
    example: 'pipeline propose proposal.json',
    run: runPropose,
  },
  {
    name: 'run',
    usage: 'pipeline run [<stage>] [--concurrency N] [--limit N] [--dry-run] [--yes] [--no-cache] [--source DIR]',
    summary: 'run a stage; with no stage, every automatic stage in pipeline order',
    options: {
      concurrency: {
        type: 'string',
        placeholder: 'N',
        description: 'how many proposals are worked on at once',
        default: (pipeline) => String(pipeline.defaults.concurrency),
      },
      limit: { type: 'string', placeholder: 'N', description: 'process at most N', default: 'no limit' },
      'dry-run': { type: 'boolean', description: 'print the plan (proposals, model calls) and write nothing' },
      yes: { type: 'boolean', short: 'y', description: 'spend on paid model calls without asking' },
      'no-cache': { type: 'boolean', description: 'ask the models again instead of reusing cached answers' },
      source: { type: 'string', placeholder: 'DIR', description: 'read source records from DIR (transform stages)', default: sourceDefault },
    },
    positionals: [0, 1],
    arguments: [
      {
        name: '<stage>',
        description: 'the stage to run; a review stage walks its queue on a terminal',
        default: 'every automatic stage in pipeline order',
        allowed: stageNames,
      },
    ],
    example: (pipeline) => `pipeline run ${(pipeline.stages.find((stage) => stage.kind === 'judge') ?? pipeline.stages[0])?.name ?? ''} --dry-run`,
    run: runRun,
  },
  {
    name: 'judge',
    usage: 'pipeline judge <id> --verdicts FILE|- [--stage NAME]',
    summary: 'record a JSON array of verdicts produced elsewhere',
    options: {
      verdicts: { type: 'string', placeholder: 'FILE|-', description: 'the verdicts, a JSON array (format below); - reads stdin', default: 'required' },
      stage: {
        type: 'string',
        placeholder: 'NAME',
        description: "the judge stage (needed only when several take the proposal's status)",
        default: 'the one that takes it',
        allowed: judgeStageNames,
      },
    },
    positionals: [1, 1],
    positionalNames: ['<id>'],
    arguments: [ID_ARGUMENT],
    example: `pipeline judge ${EXAMPLE_ID} --verdicts verdicts.json`,
    details: verdictFormatHelp,
    run: runJudge,
  },
  {
    name: 'promote',
    usage: 'pipeline promote <id> [--stage NAME]',
    summary: 'write the terminal record of a judged proposal',
    options: {
      stage: {
        type: 'string',
        placeholder: 'NAME',
        description: "the promote stage (needed only when several take the proposal's status)",
        default: 'the one that takes it',
        allowed: promoteStageNames,
      },
    },
    positionals: [1, 1],
    positionalNames: ['<id>'],
    arguments: [ID_ARGUMENT],
    example: `pipeline promote ${EXAMPLE_ID}`,
    run: runPromote,
  },
  {
    name: 'rescore',
    usage: 'pipeline rescore --rubric FILE [--rubric FILE …] [--json]',
    summary: 'replay recorded panels under edited rubrics',
    options: { rubric: { type: 'string', multiple: true, placeholder: 'FILE', description: 'an edited rubric file; repeatable', default: 'required' } },
    positionals: [0, 0],
    example: (pipeline) => `pipeline rescore --rubric ${rubricFiles(pipeline)[0] ?? 'rubric.yaml'}`,
    details: () => ['Calls no model and writes nothing: it reports which decisions the edited rubrics would flip.'],
    run: runRescore,
  },
  {
    name: 'viz',
    usage: 'pipeline viz [--format html|svg|dot|mermaid|json] [--out FILE] [--serve [--port N]]',
    summary: 'render the lifecycle with live counts',
    options: {
      format: { type: 'string', placeholder: 'F', description: 'what to render', default: 'html; json with --json', allowed: VIZ_FORMATS },
      out: { type: 'string', placeholder: 'FILE', description: 'write to FILE instead of stdout', default: 'stdout' },
      serve: { type: 'boolean', description: 'serve the page on 127.0.0.1 with live counts, until Ctrl-C' },
      port: { type: 'string', placeholder: 'N', description: 'the port for --serve; 0 picks a free one', default: String(DEFAULT_PORT) },
    },
    positionals: [0, 0],
    example: 'pipeline viz --out lifecycle.html',
    run: runViz,
  },
  {
    name: 'store',
    usage: 'pipeline store copy --from STORE --to STORE',
    summary: 'copy a whole store between backends (a directory or postgres://…); the destination must be empty',
    options: {
      from: {
        type: 'string',
        placeholder: 'STORE',
        description: 'the store to copy: a directory, or postgres://user@host:port/db?schema=NAME',
        default: 'required',
      },
      to: { type: 'string', placeholder: 'STORE', description: 'an empty store (a directory that does not exist yet is created)', default: 'required' },
    },
    positionals: [1, 1],
    positionalNames: ['copy'],
    arguments: [{ name: 'copy', description: 'the action (the only one)' }],
    example: "pipeline store copy --from .pipeline --to 'postgres://me@db:5432/pipeline?schema=lessons'",
    details: () => ['Copies proposals, the audit log, the ledgers, pool entries and documents (not the answer cache), in order, and checks the counts.'],
    run: runStore,
  },
  {
    name: 'pool',
    usage: POOL_USAGE,
    summary: POOL_SUMMARY,
    options: POOL_OPTIONS,
    positionals: [1, 3],
    positionalNames: ['<subcommand>'],
    arguments: [
      { name: '<subcommand>', description: 'top, outcome, archive, restore or prune (SPEC §5.8)' },
      { name: '<id>', description: 'outcome, archive, restore: the proposal, by id or by its source key', default: 'top and prune take none' },
      { name: 'hit|miss', description: 'outcome: whether the proposal helped', allowed: ['hit', 'miss'], default: 'only outcome takes it' },
    ],
    example: 'pipeline pool top --stack vite --k 3 --json',
    run: runPool,
  },
  {
    name: 'init',
    usage: 'pipeline init [DIR]',
    summary: 'scaffold a working copy of the shipped pipeline',
    options: {},
    positionals: [0, 1],
    arguments: [{ name: 'DIR', description: 'a new or empty directory', default: 'the working directory' }],
    example: 'pipeline init my-pipeline',
    run: runInit,
  },
];

function sourceDefault(pipeline: Pipeline): string {
  const dirs = pipeline.stages.flatMap((stage) => (stage.kind === 'transform' ? [`${stage.source.dir} (${stage.name})`] : []));
  return dirs.length ? dirs.join(', ') : 'the stage has no source';
}

function rubricFiles(pipeline: Pipeline): string[] {
  return pipeline.def.rubrics ?? [];
}
