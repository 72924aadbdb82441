/** The built-in commands: name, usage line, options and the function that runs them. */
import type { OptionSpecs } from './args.js';
import type { Context } from './context.js';
import { runInit } from './commands/init.js';
import { runJudge } from './commands/judge.js';
import { runList, runPropose, runShow, runStatus } from './commands/queue.js';
import { POOL_OPTIONS, POOL_SUMMARY, POOL_USAGE, runPool } from './commands/pool.js';
import { runPromote } from './commands/promote.js';
import { runRescore } from './commands/rescore.js';
import { runRun } from './commands/run.js';
import { runValidate } from './commands/validate.js';
import { runViz } from './commands/viz.js';

export interface CommandSpec {
  name: string;
  usage: string;
  summary: string;
  options: OptionSpecs;
  /** How many positionals: [min, max]. */
  positionals: [number, number];
  positionalNames?: string[];
  run(context: Context): Promise<number>;
}

export const BUILT_INS: CommandSpec[] = [
  { name: 'validate', usage: 'pipeline validate', summary: 'check all configuration', options: {}, positionals: [0, 0], run: runValidate },
  { name: 'status', usage: 'pipeline status [--json]', summary: 'counts for every state of the machine, zeros included', options: {}, positionals: [0, 0], run: runStatus },
  { name: 'list', usage: 'pipeline list [--state S] [--json]', summary: 'proposals in a state (default: the initial state)', options: { state: { type: 'string' } }, positionals: [0, 0], run: runList },
  { name: 'show', usage: 'pipeline show <id> [--json]', summary: 'one proposal', options: {}, positionals: [1, 1], positionalNames: ['<id>'], run: runShow },
  { name: 'propose', usage: 'pipeline propose [FILE|-]', summary: 'create a pending proposal from {artifact_id, candidate}; prints the id', options: {}, positionals: [0, 1], run: runPropose },
  {
    name: 'run',
    usage: 'pipeline run [<stage>] [--concurrency N] [--limit N] [--dry-run] [--yes] [--no-cache] [--source DIR]',
    summary: 'run a stage; with no stage, every automatic stage in pipeline order',
    options: { concurrency: { type: 'string' }, limit: { type: 'string' }, 'dry-run': { type: 'boolean' }, yes: { type: 'boolean', short: 'y' }, 'no-cache': { type: 'boolean' }, source: { type: 'string' } },
    positionals: [0, 1],
    run: runRun,
  },
  { name: 'judge', usage: 'pipeline judge <id> --verdicts FILE|-', summary: 'record a JSON array of verdicts produced elsewhere', options: { verdicts: { type: 'string' } }, positionals: [1, 1], positionalNames: ['<id>'], run: runJudge },
  { name: 'promote', usage: 'pipeline promote <id>', summary: 'write the terminal record of a judged proposal', options: {}, positionals: [1, 1], positionalNames: ['<id>'], run: runPromote },
  { name: 'rescore', usage: 'pipeline rescore --rubric FILE [--rubric FILE …] [--json]', summary: 'replay recorded panels under edited rubrics', options: { rubric: { type: 'string', multiple: true } }, positionals: [0, 0], run: runRescore },
  {
    name: 'viz',
    usage: 'pipeline viz [--format html|svg|dot|mermaid|json] [--out FILE] [--serve [--port N]]',
    summary: 'render the lifecycle with live counts',
    options: { format: { type: 'string' }, out: { type: 'string' }, serve: { type: 'boolean' }, port: { type: 'string' } },
    positionals: [0, 0],
    run: runViz,
  },
  { name: 'pool', usage: POOL_USAGE, summary: POOL_SUMMARY, options: POOL_OPTIONS, positionals: [1, 3], positionalNames: ['<subcommand>'], run: runPool },
  { name: 'init', usage: 'pipeline init [DIR]', summary: 'scaffold a working copy of the shipped pipeline', options: {}, positionals: [0, 1], run: runInit },
];
