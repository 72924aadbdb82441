/**
 * `pipeline help [COMMAND]`, `COMMAND --help` and `--version`. Help is rendered from the command
 * specs — the same data the parser uses — with the allowed values and defaults read from the
 * configuration when it loads (states, stages, the values of a review command's arguments).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadPipeline, type Pipeline } from '../config/load.js';
import { findPipelineDir } from '../config/locate.js';
import { isPipelineError } from '../errors.js';
import { reviewCommands } from '../stages/review.js';
import { packageRoot } from '../util/package-root.js';
import { closest, listWords } from '../util/suggest.js';
import { wrapHanging } from '../util/wrap.js';
import { HELP_WIDTH as WIDTH, table } from './layout.js';
import { GLOBAL_OPTIONS, UsageError, type FromConfig, type OptionSpec } from './args.js';
import type { CommandSpec } from './command-spec.js';
import { BUILT_INS } from './commands.js';
import type { Io } from './io.js';
import { globalValue, specFor } from './review-commands.js';

export function versionText(): string {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return `pipeline ${pkg.version}`;
}

/** What help can know of the pipeline: nothing when there is none, or why it did not load. */
export interface HelpConfig {
  pipeline?: Pipeline;
  problem?: string;
  /** No pipeline was found: where it was looked for (its review commands are unknown then). */
  notFound?: string;
}

/** Load the pipeline for help (never throws: help works without one). */
export async function readHelpConfig(io: Io, argv: readonly string[]): Promise<HelpConfig> {
  try {
    return { pipeline: await loadPipeline(findPipelineDir(io.cwd, globalValue(argv, 'dir')), io.env) };
  } catch (error) {
    if (isPipelineError(error) && error.code === 'config.not_found') return { notFound: error.message };
    return { problem: isPipelineError(error) ? error.message : String(error) };
  }
}

/** Every command: the built-ins, then the pipeline's review commands. */
export function allSpecs(config: HelpConfig): CommandSpec[] {
  return [...BUILT_INS, ...(config.pipeline ? reviewCommands(config.pipeline).map(specFor) : [])];
}

/** The spec a command line names: `pool top` before `pool`. */
export function findSpec(specs: readonly CommandSpec[], words: readonly string[]): CommandSpec | undefined {
  for (let n = words.length; n > 0; n--) {
    const name = words.slice(0, n).join(' ');
    const spec = specs.find((candidate) => candidate.name === name);
    if (spec) return spec;
  }
  return undefined;
}

/** The usage error for a command nobody declares, with the closest name as a hint. */
export function unknownCommand(name: string, specs: readonly CommandSpec[], notFound?: string): UsageError {
  const names = [...specs.map((spec) => spec.name), 'help'];
  const near = closest(name, names);
  // With no pipeline, its review commands are unknown too: say so, rather than only that this one is.
  if (near === undefined && notFound !== undefined)
    return new UsageError(
      `unknown command: ${name}`,
      `a review command is declared by the pipeline, and there is ${notFound}: give --dir DIR, or run it in a pipeline's directory`,
    );
  const hint = near ? `did you mean "${near}"? (\`pipeline help\` lists every command)` : 'run `pipeline help` for the list of commands';
  return new UsageError(`unknown command: ${name}`, hint);
}

function resolve<T>(value: FromConfig<T> | undefined, pipeline: Pipeline | undefined): T | undefined {
  if (typeof value !== 'function') return value;
  return pipeline ? (value as (pipeline: Pipeline) => T)(pipeline) : undefined;
}

function optionLabel(name: string, spec: OptionSpec): string {
  const flag = `${spec.short ? `-${spec.short}, ` : ''}--${name}`;
  return spec.type === 'string' ? `${flag} ${spec.placeholder ?? 'VALUE'}` : flag;
}

function optionText(spec: OptionSpec, pipeline: Pipeline | undefined): string {
  const parts = [spec.description ?? ''];
  const fallback = spec.type === 'string' && typeof spec.default === 'function' ? 'from pipeline.yaml' : undefined;
  const given = resolve(spec.default, pipeline) ?? fallback;
  if (given !== undefined) parts.push(`(default: ${given})`);
  const allowed = resolve(spec.allowed, pipeline);
  if (allowed?.length) parts.push(`— one of ${listWords([...allowed])}`);
  return parts.filter(Boolean).join(' ');
}

/** `help COMMAND`: usage, what it does, its arguments and options with defaults and allowed values, an example. */
export function renderCommandHelp(spec: CommandSpec, config: HelpConfig): string {
  const { pipeline } = config;
  const lines = [`usage: ${spec.usage}`, '', wrapHanging(spec.summary, WIDTH, 0)];
  if (spec.arguments?.length) {
    lines.push('', 'arguments:');
    const rows = spec.arguments.map((argument) => {
      const more = pipeline && argument.more ? argument.more(pipeline) : '';
      const given = resolve(argument.default, pipeline);
      const allowed = resolve(argument.allowed, pipeline);
      const text = [`${argument.description}${more}`];
      if (given !== undefined) text.push(`(default: ${given})`);
      if (allowed?.length) text.push(`— one of ${listWords([...allowed])}`);
      return [argument.name, text.join(' ')] as const;
    });
    lines.push(...table(rows));
  }
  const options = Object.entries(spec.options);
  if (options.length) {
    lines.push('', 'options:');
    lines.push(...table(options.map(([name, option]) => [optionLabel(name, option), optionText(option, pipeline)] as const)));
    if (options.some(([, option]) => option.type === 'boolean')) lines.push('  (flags are off unless given)');
  }
  lines.push(
    '',
    `global options: ${Object.entries(GLOBAL_OPTIONS)
      .map(([name, option]) => optionLabel(name, option))
      .join(', ')} (see \`pipeline help\`)`,
  );
  const details = spec.details?.(pipeline) ?? [];
  if (details.length) lines.push('', ...details.map((line) => (line.startsWith(' ') ? line : wrapHanging(line, WIDTH, 0))));
  const example = resolve(spec.example, pipeline);
  if (example !== undefined) lines.push('', 'example:', `  ${example}`);
  if (config.problem) lines.push('', `(values from the configuration are not shown: ${config.problem}; run \`pipeline validate\`)`);
  return lines.join('\n');
}

/** `pipeline help`: every command in one line each, the global options and the exit codes. */
export function renderOverview(config: HelpConfig): string {
  const review = config.pipeline ? reviewCommands(config.pipeline).map(specFor) : [];
  const globals = Object.entries(GLOBAL_OPTIONS).map(([name, option]) => [optionLabel(name, option), optionText(option, undefined)] as const);
  const all = table([...BUILT_INS.map((spec) => [spec.name, spec.summary] as const), ...review.map((spec) => [spec.name, spec.summary] as const), ...globals]);
  const built = all.slice(0, BUILT_INS.length);
  const declared = all.slice(BUILT_INS.length, BUILT_INS.length + review.length);
  const global = all.slice(BUILT_INS.length + review.length);
  return [
    'usage: pipeline [--dir DIR] [--store DIR] [--json] <command> [options]',
    '',
    'A declarative pipeline engine: proposals move through a lifecycle declared in YAML.',
    '',
    'commands:',
    ...built,
    ...(declared.length ? ['', 'review commands (declared in the review stage):', ...declared] : []),
    '',
    'global options (before or after the command):',
    ...global,
    '',
    'exit codes: 0 success, 1 refused or invalid, 2 could not be judged (retry later), 130 interrupted',
    'run `pipeline help <command>` (or `pipeline <command> --help`) for its options and an example.',
    ...(config.problem ? ['', `(the review commands are not shown: ${config.problem}; run \`pipeline validate\`)`] : []),
  ].join('\n');
}
