/**
 * Review commands (`confirm`, `pass`, …) are declared in the review stage's YAML; their options
 * and usage lines are built from it. `pipeline run review` walks the queue over the same code.
 */
import { loadPipeline } from '../config/load.js';
import { findPipelineDir } from '../config/locate.js';
import { isPipelineError } from '../errors.js';
import { findReviewCommand, optionName, runReviewCommand, type ReviewCommand } from '../stages/review.js';
import type { OptionSpec, OptionSpecs } from './args.js';
import { listWords } from '../util/suggest.js';
import { EXAMPLE_ID, type CommandSpec } from './command-spec.js';
import type { Io } from './io.js';
import { printOutcome } from './print.js';

/** The value of a global option in a raw command line (before the command's own options are known). */
export function globalValue(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) return argv[i + 1];
    if (argv[i]!.startsWith(`--${name}=`)) return argv[i]!.slice(name.length + 3);
  }
  return undefined;
}

/** How usage shows an argument's value: its allowed values, or what its declared type reads. */
function valueWords(schema: Record<string, unknown>): string {
  if (Array.isArray(schema['enum'])) return (schema['enum'] as unknown[]).join('|');
  return schema['type'] === 'boolean' ? 'true|false' : schema['type'] === 'integer' ? 'N' : schema['type'] === 'number' ? 'NUMBER' : 'TEXT';
}

export function reviewUsage(command: ReviewCommand): string {
  const required = new Set(command.def.required ?? []);
  const parts = [`pipeline ${command.name} <id>`];
  for (const [arg, schema] of Object.entries(command.def.args ?? {})) {
    if (arg === command.def.positional) continue;
    const text = `${optionName(arg)} ${valueWords(schema)}`;
    parts.push(required.has(arg) ? text : `[${text}]`);
  }
  if (command.def.positional)
    parts.push(required.has(command.def.positional) ? command.def.positional.toUpperCase() : `[${command.def.positional.toUpperCase()}]`);
  return parts.join(' ');
}

/** An argument's help, from its JSON Schema: description, allowed values (enum), default. */
function optionHelp(command: ReviewCommand, arg: string): OptionSpec {
  const schema = command.def.args?.[arg] ?? {};
  const values = Array.isArray(schema['enum']) ? (schema['enum'] as unknown[]).map(String) : undefined;
  const required = (command.def.required ?? []).includes(arg);
  return {
    type: 'string',
    placeholder: values ? arg.slice(0, 1).toUpperCase() : valueWords(schema),
    description: typeof schema['description'] === 'string' ? schema['description'] : arg.replace(/_/g, ' '),
    default: required ? 'required' : schema['default'] !== undefined ? String(schema['default']) : 'not given',
    ...(values ? { allowed: values } : {}),
  };
}

/** A command line that works: the required arguments, and those with a declared example. */
function exampleFor(command: ReviewCommand): string {
  const parts = [`pipeline ${command.name} ${EXAMPLE_ID}`];
  const quoted = (value: string) => (/^[A-Za-z0-9_./:@=+-]+$/.test(value) ? value : `"${value.replace(/(["\\$`])/g, '\\$1')}"`);
  for (const [arg, schema] of Object.entries(command.def.args ?? {})) {
    const examples = Array.isArray(schema['examples']) ? (schema['examples'] as unknown[]).map(String) : [];
    const values = Array.isArray(schema['enum']) ? (schema['enum'] as unknown[]).map(String) : [];
    const required = (command.def.required ?? []).includes(arg);
    const value = examples[0] ?? (required ? (values[0] ?? 'TEXT') : undefined);
    if (value === undefined) continue;
    parts.push(arg === command.def.positional ? quoted(value) : `${optionName(arg)} ${quoted(value)}`);
  }
  return parts.join(' ');
}

export function specFor(command: ReviewCommand): CommandSpec {
  const options: OptionSpecs = {};
  for (const arg of Object.keys(command.def.args ?? {})) if (arg !== command.def.positional) options[optionName(arg).slice(2)] = optionHelp(command, arg);
  const positional = command.def.positional;
  const positionalHelp = positional ? optionHelp(command, positional) : undefined;
  return {
    name: command.name,
    usage: reviewUsage(command),
    summary: command.def.description ?? `the ${command.def.event} event`,
    options,
    positionals: [1, positional ? 2 : 1],
    positionalNames: ['<id>', positional ?? ''],
    arguments: [
      { name: '<id>', description: 'a proposal id (a ULID)', more: (pipeline) => `, or the ${pipeline.def.proposal.key} the proposal was made from` },
      ...(positional && positionalHelp
        ? [{ name: positional.toUpperCase(), description: positionalHelp.description ?? positional, default: positionalHelp.default ?? 'not given' }]
        : []),
    ],
    example: exampleFor(command),
    details: (pipeline) => {
      const from = pipeline?.lifecycle.transitions.filter((t) => t.event === command.def.event).map((t) => t.from) ?? [];
      return from.length ? [`It applies to ${listWords([...new Set(from)])} proposals (the ${command.def.event} event of the lifecycle).`] : [];
    },
    async run(context) {
      const engine = await context.engine();
      const [id, positional] = context.parsed.positionals as [string, string | undefined];
      const args: Record<string, unknown> = {};
      for (const arg of Object.keys(command.def.args ?? {})) {
        const value = arg === command.def.positional ? positional : context.parsed.values[optionName(arg).slice(2)];
        if (value !== undefined) args[arg] = value;
      }
      return printOutcome(context.out, await runReviewCommand(engine, command, id, args, 'cli'));
    },
  };
}

/** The spec of a review command named `name`, when the pipeline declares one. */
export async function reviewCommandSpec(io: Io, argv: readonly string[], name: string): Promise<CommandSpec | undefined> {
  let dir: string;
  try {
    dir = findPipelineDir(io.cwd, globalValue(argv, 'dir'));
  } catch (error) {
    if (isPipelineError(error) && error.code === 'config.not_found') return undefined;
    throw error;
  }
  const pipeline = await loadPipeline(dir, io.env);
  const command = findReviewCommand(pipeline, name);
  return command ? specFor(command) : undefined;
}
