/**
 * The review stage's commands (SPEC §5.3): each one a machine event with declared arguments.
 * Order of checks: id, existence, arguments (JSON Schema), preconditions (machine guards), then
 * the proposal's status through the machine. No provider is ever called here.
 */
import { describeErrors, type Finding } from '../config/describe-errors.js';
import type { Pipeline } from '../config/load.js';
import { argsKey } from '../util/schema-keys.js';
import type { CommandDef, ReviewStageDef } from '../config/types.js';
import type { Actor, Engine } from '../engine.js';
import { guardPasses } from '../lifecycle/decide.js';
import { refused, type Outcome } from '../outcome.js';
import { quotedNonId } from '../util/ids.js';
import { listWords } from '../util/suggest.js';
import { overCap, oversizeField } from '../util/text-size.js';

export interface ReviewCommand {
  stage: ReviewStageDef;
  name: string;
  def: CommandDef;
}

export function reviewCommands(pipeline: Pipeline): ReviewCommand[] {
  return pipeline.stages.flatMap((stage) => (stage.kind === 'review' ? Object.entries(stage.commands).map(([name, def]) => ({ stage, name, def })) : []));
}

export function findReviewCommand(pipeline: Pipeline, name: string): ReviewCommand | undefined {
  return reviewCommands(pipeline).find((command) => command.name === name);
}

/**
 * Typed text: what a command line or a person types, read as the type the argument declares
 * (`--urgent true`, `--priority 3`; undeclared or string: the text itself), or why it is not one.
 * A list or an object cannot be typed as one value: the configuration refuses those types
 * (REVIEW_ARGUMENT_TYPES, config/cross-check.ts).
 */
export function typedArgument(schema: Record<string, unknown>, text: string): { ok: true; value: unknown } | { ok: false; why: string } {
  const got = `got ${quotedNonId(text)}`;
  switch (schema['type']) {
    case 'boolean':
      return text === 'true' ? { ok: true, value: true } : text === 'false' ? { ok: true, value: false } : { ok: false, why: `must be true or false, ${got}` };
    case 'integer':
      // Up to 15 digits: every such number is exact in a double.
      return /^[+-]?\d{1,15}$/.test(text) ? { ok: true, value: Number(text) } : { ok: false, why: `must be a whole number, ${got}` };
    case 'number':
      return /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text) && Number.isFinite(Number(text))
        ? { ok: true, value: Number(text) }
        : { ok: false, why: `must be a number, ${got}` };
    default: {
      // No type, but a list of values (or one): the text names one of them, whatever its type
      // (`enum: [1, 2, 3]` takes `--level 2` as the number 2).
      const choices = Array.isArray(schema['enum']) ? (schema['enum'] as unknown[]) : Object.hasOwn(schema, 'const') ? [schema['const']] : [];
      const named = choices.find((choice) => choice !== null && typeof choice !== 'object' && String(choice) === text);
      return { ok: true, value: named ?? text };
    }
  }
}

/** `version_independent` is written `--version-independent` on the command line. */
export function optionName(arg: string): string {
  return `--${arg.replace(/_/g, '-')}`;
}

function argOf(finding: Finding): string {
  return finding.code === 'schema.required' ? (/"([^"]+)"/.exec(finding.message)?.[1] ?? '') : (finding.path[0] ?? '');
}

function describeArgFinding(command: ReviewCommand, finding: Finding, naming: 'option' | 'plain' = 'option'): string {
  const arg = argOf(finding);
  const schema = (command.def.args?.[arg] ?? {}) as Record<string, unknown>;
  const allowed = Array.isArray(schema['enum']) ? ` (${listWords((schema['enum'] as unknown[]).map(String))})` : '';
  const name = naming === 'plain' ? arg.replace(/_/g, ' ') : command.def.positional === arg ? arg.toUpperCase() : optionName(arg);
  if (finding.code === 'schema.required') return `${name} is required${allowed}`;
  if (finding.code === 'schema.enum')
    return `${name} must be one of ${listWords((schema['enum'] as unknown[]).map(String))}, got ${finding.message.match(/ ("[^"]*"|\S+) \(expected/)?.[1] ?? 'something else'}`;
  const message = typeof schema['message'] === 'string' ? schema['message'] : finding.message;
  return `${name}: ${message}`;
}

/**
 * Check one argument on its own, as a person types it in the walk: the problem in plain words
 * (`audience must be one of team or world, got "everyone"`), or undefined when it is
 * acceptable. An empty answer is a missing one.
 */
export function checkArgument(engine: Engine, command: ReviewCommand, arg: string, value: string | undefined): string | undefined {
  const over = oversizeField(value, engine.maxFieldBytes);
  if (over) return overCap(arg.replace(/_/g, ' '), over.bytes, engine.maxFieldBytes);
  const typed = value === undefined ? undefined : typedArgument(command.def.args?.[arg] ?? {}, value);
  if (typed && !typed.ok) return `${arg.replace(/_/g, ' ')} ${typed.why}`;
  const validate = engine.pipeline.schemas.inline(argsKey(command.stage.name, command.name));
  if (validate(typed === undefined ? {} : { [arg]: typed.value })) return undefined;
  const mine = describeErrors(validate.errors).filter((finding) => argOf(finding) === arg);
  return mine.length ? mine.map((finding) => describeArgFinding(command, finding, 'plain')).join('; ') : undefined;
}

/** Run one review command on one proposal. */
export async function runReviewCommand(engine: Engine, command: ReviewCommand, id: string, args: Record<string, unknown>, actor: Actor): Promise<Outcome> {
  const read = await engine.read(id);
  if (!read.ok) return read.outcome;
  // A person's text goes into the proposal (a justification) or a ledger row (a reason): held to
  // the cap a transform holds a candidate's text to.
  for (const [arg, value] of Object.entries(args)) {
    const over = oversizeField(value, engine.maxFieldBytes);
    if (!over) continue;
    const name = command.def.positional === arg ? arg.toUpperCase() : optionName(arg);
    const status = String(read.stored.proposal['status']);
    return refused('invalid_args', `${command.name} ${id} (${status}): ${overCap(name, over.bytes, engine.maxFieldBytes)}`, undefined, id);
  }
  // Text from a command line or a person is read as the type each argument declares.
  const given = args;
  args = {};
  for (const [arg, value] of Object.entries(given)) {
    const typed = typeof value === 'string' ? typedArgument(command.def.args?.[arg] ?? {}, value) : { ok: true as const, value };
    if (typed.ok) {
      args[arg] = typed.value;
      continue;
    }
    const name = command.def.positional === arg ? arg.toUpperCase() : optionName(arg);
    return refused('invalid_args', `${command.name} ${id} (${String(read.stored.proposal['status'])}): ${name} ${typed.why}`, undefined, id);
  }
  const validate = engine.pipeline.schemas.inline(argsKey(command.stage.name, command.name));
  if (!validate(args)) {
    const problems = describeErrors(validate.errors).map((finding) => describeArgFinding(command, finding));
    return refused('invalid_args', `${command.name} ${id} (${String(read.stored.proposal['status'])}): ${problems.join('; ')}`, undefined, id);
  }
  const lifecycle = engine.pipeline.lifecycle;
  return engine.applyTo(read.stored, command.def.event, args, {
    stage: command.stage.name,
    actor,
    redecide: true,
    before: (stored) => {
      for (const guard of command.def.preconditions ?? []) {
        if (!guardPasses(lifecycle, guard, stored.proposal, args)) {
          const message = lifecycle.def.guards?.[guard]?.message ?? `${guard} does not hold`;
          return { kind: 'refused', code: 'precondition', message: `${id} (${String(stored.proposal['status'])}): ${message}` };
        }
      }
      return undefined;
    },
  });
}
