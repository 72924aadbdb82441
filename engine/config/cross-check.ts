/**
 * The rules that span files (SPEC §2): stages name real events, states, rubrics, schemas,
 * ledgers and providers; guards and effects exist; every state is reachable; review commands do
 * not shadow built-in commands. Pure: returns positioned issues (and warnings).
 */
import path from 'node:path';
import type { Issue } from '../errors.js';
import { checkExpression, type ExprRules } from '../expr/check.js';
import { checkPool } from '../pool/config.js';
import { RESERVED_COLLECTIONS } from '../store/journal.js';
import { flattenTransitions, normalizeTransitions, reachableStates } from '../lifecycle/machine.js';
import { isObject } from '../util/json-path.js';
import { didYouMean, listWords } from '../util/suggest.js';
import type { Sources } from './load.js';
import type { SchemaRegistry } from './schema-registry.js';
import { issueAt, type SourceFile } from './source.js';
import type { JudgeStageDef, MachineDef, PipelineDef, PromoteStageDef, ReviewStageDef, Rubric, StageDef, TransformStageDef } from './types.js';

export const BUILT_IN_COMMANDS = [
  'validate',
  'status',
  'list',
  'show',
  'propose',
  'run',
  'judge',
  'promote',
  'rescore',
  'viz',
  'init',
  'help',
  'version',
  'store',
  'pool',
];
/** The command line's global options (cli/args.ts GLOBAL_OPTIONS): no review argument may be spelled as one. */
export const GLOBAL_OPTION_NAMES = ['dir', 'store', 'json', 'help'];
/** The types a review argument may declare: one value typed on a command line (stages/review.ts `typedArgument`). */
export const REVIEW_ARGUMENT_TYPES = ['string', 'number', 'integer', 'boolean'];
/** Audit events the engine records itself. */
export const ENGINE_EVENTS = ['create', 'promote'];
/** A store collection's name, as the machine schema spells `move`. */
const COLLECTION = /^[a-z][a-z0-9_-]*$/;

interface Context {
  def: PipelineDef;
  machine: MachineDef;
  stages: StageDef[];
  rubrics: Map<string, Rubric>;
  schemas: SchemaRegistry;
  sources: Sources;
}

class Collector {
  readonly issues: Issue[] = [];
  error(source: SourceFile | undefined, path: (string | number)[], code: string, message: string, hint?: string): void {
    if (!source) return;
    this.issues.push(issueAt(source, path.map(String), code, message, hint));
  }
  warn(source: SourceFile | undefined, path: (string | number)[], code: string, message: string, hint?: string): void {
    if (!source) return;
    this.issues.push({ ...issueAt(source, path.map(String), code, message, hint), severity: 'warning' });
  }
  unknown(source: SourceFile | undefined, path: (string | number)[], what: string, name: string, known: Iterable<string>, where: string): void {
    const names = [...known];
    this.error(
      source,
      path,
      `config.unknown_${what.replace(/ /g, '_')}`,
      `unknown ${what} "${name}"`,
      didYouMean(name, names) ?? (names.length ? `${where}: ${names.join(', ')}` : `no ${what}s are declared ${where.replace(/^declared /, '')}`),
    );
  }
  expressions(source: SourceFile | undefined, path: (string | number)[], expr: unknown, rules: ExprRules): void {
    for (const problem of checkExpression(expr, rules)) this.error(source, [...path, ...problem.path], 'config.expression', problem.message, problem.hint);
  }
}

export function crossCheck(context: Context): Issue[] {
  const out = new Collector();
  checkPipeline(context, out);
  checkMachine(context, out);
  checkStages(context, out);
  checkRubrics(context, out);
  if (context.def.pool && context.sources.pipeline) {
    const source = context.sources.pipeline;
    out.issues.push(
      ...checkPool(context.def.pool, context.machine, (at, code, message, hint) => issueAt(source, at, code, message, hint), collectionsOf(context)),
    );
  }
  return out.issues;
}

/** The collections of entries the pipeline writes or moves: what promote stages write, and every move's from and to. */
function collectionsOf({ machine, stages }: Context): string[] {
  const written = stages.flatMap((stage) =>
    stage.kind === 'promote' ? Object.values(stage.outcomes).flatMap((outcome) => (outcome.write ? [outcome.write] : [])) : [],
  );
  const moved = Object.values(machine.effects ?? {}).flatMap((operations) =>
    operations.flatMap((op) => (op.move !== undefined ? [op.move, ...(typeof op.to === 'string' ? [op.to] : [])] : [])),
  );
  return [...new Set([...written, ...moved])];
}

function checkPipeline({ def, schemas, sources }: Context, out: Collector): void {
  const main = sources.pipeline;
  // Two ledgers in one file would read each other's rows as their own (a `once` check, a rescore).
  const byFile = new Map<string, string>();
  for (const [name, file] of Object.entries(def.ledgers ?? {})) {
    const other = byFile.get(path.normalize(file));
    if (other !== undefined)
      out.error(main, ['ledgers', name], 'config.ledger_file', `ledgers "${other}" and "${name}" are both ${file}`, 'give each ledger a file of its own');
    else byFile.set(path.normalize(file), name);
  }
  for (const [name, file] of Object.entries(def.ledgers ?? {})) {
    if (name === 'events' || file === 'events.jsonl')
      out.error(
        main,
        ['ledgers', name],
        'config.reserved_ledger',
        `"${name === 'events' ? name : file}" is the audit log's name; choose another ledger name and file`,
      );
  }
  if (!schemas.has(def.proposal.schema)) out.unknown(main, ['proposal', 'schema'], 'schema', def.proposal.schema, schemas.names(), 'declared under schemas:');
  // The fields a proposal is made of: the engine's own (`id`, `status`) and the three named here,
  // each a field of its own (a payload named `status` made every proposal unreadable).
  const named = new Map<string, string>([
    ['id', 'the id'],
    ['status', 'the status'],
  ]);
  for (const key of ['key', 'payload', 'created'] as const) {
    const field = def.proposal[key];
    if (field === undefined) continue;
    const taken = named.get(field);
    if (taken !== undefined)
      out.error(main, ['proposal', key], 'config.proposal_field', `proposal.${key} "${field}" is ${taken}'s field too`, 'name a field of its own');
    else named.set(field, `proposal.${key}`);
  }
  const secrets = Object.keys(def.secrets ?? {});
  for (const [name, provider] of Object.entries(def.providers ?? {})) {
    if (provider.kind === 'checks') {
      for (const [criterion, checks] of Object.entries((provider['criteria'] as Record<string, unknown[]>) ?? {})) {
        checks.forEach((check, index) => {
          const at = ['providers', name, 'criteria', criterion, index];
          if (!isObject(check)) return;
          const absent = check['absent'];
          if (isObject(absent)) checkPatterns(out, main, [...at, 'absent', 'patterns'], absent['patterns']);
        });
      }
    }
    if (provider.kind === 'openai' || provider.kind === 'anthropic') checkKeyVariable(out, main, name, provider['api_key_env']);
    if (provider.kind === 'map') {
      const rules: ExprRules = { allow: ['$field', '$value', '$template', '$match', '$pairs', '$keys', '$first', '$lookup', '$count'], secrets };
      out.expressions(main, ['providers', name, 'output'], provider['output'], rules);
      ((provider['refuse'] as { unless: unknown }[]) ?? []).forEach((refusal, index) =>
        out.expressions(main, ['providers', name, 'refuse', index, 'unless'], refusal.unless, rules),
      );
    }
  }
}

/**
 * Does a variable-name-shaped value look like a key rather than a name? Names are words joined by
 * `_` (ANTHROPIC_API_KEY, OPENAI_API_KEY_2); keys that fit the name pattern (AKIA…, ghp_…, npm_…,
 * sk_live_…, AIza…) have a long random part: a segment of 16 or more characters with a digit.
 * Pure, and local on purpose: configuration loading imports no provider code.
 */
export function looksLikeKey(value: string): boolean {
  return value.split('_').some((segment) => segment.length >= 16 && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment));
}

/**
 * `api_key_env` names a variable. The schema refuses anything that is not a name without quoting
 * it; a name-shaped value that looks like a key itself (AKIA…, a long mixed-case token) is refused
 * here, and neither message ever echoes the value: it may be a key pasted in by mistake.
 */
function checkKeyVariable(out: Collector, source: SourceFile | undefined, provider: string, variable: unknown): void {
  if (typeof variable !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable) || !looksLikeKey(variable)) return;
  const message = 'api_key_env looks like a key itself, not the name of an environment variable (the value is not shown)';
  const hint = 'put the key in an environment variable and name that variable here, e.g. api_key_env: ANTHROPIC_API_KEY';
  out.error(source, ['providers', provider, 'api_key_env'], 'config.api_key_value', message, hint);
}

function checkPatterns(out: Collector, source: SourceFile | undefined, path: (string | number)[], patterns: unknown): void {
  if (!Array.isArray(patterns)) return;
  patterns.forEach((pattern, index) => {
    try {
      new RegExp(String(pattern));
    } catch (error) {
      out.error(source, [...path, index], 'config.pattern', `invalid regular expression: ${(error as Error).message}`);
    }
  });
}

function transitionPath(machine: MachineDef, from: string, event: string, index: number): (string | number)[] {
  const raw = machine.states[from]?.on?.[event];
  return Array.isArray(raw) ? ['states', from, 'on', event, index] : ['states', from, 'on', event];
}

function checkMachine({ def, machine, schemas, sources }: Context, out: Collector): void {
  const src = sources.machine;
  const states = Object.keys(machine.states);
  const guards = Object.keys(machine.guards ?? {});
  const effects = Object.keys(machine.effects ?? {});
  const ledgers = Object.keys(def.ledgers ?? {});
  if (!states.includes(machine.initial)) out.unknown(src, ['initial'], 'state', machine.initial, states, 'states');

  for (const [from, state] of Object.entries(machine.states)) {
    for (const [event, raw] of Object.entries(state.on ?? {})) {
      if (ENGINE_EVENTS.includes(event))
        out.error(src, ['states', from, 'on', event], 'config.reserved_event', `"${event}" is recorded by the engine itself and cannot be a machine event`);
      normalizeTransitions(from, event, raw).forEach((transition, index) => {
        const at = transitionPath(machine, from, event, index);
        if (transition.target !== undefined && !states.includes(transition.target)) {
          out.unknown(src, typeof raw === 'string' ? at : [...at, 'target'], 'state', transition.target, states, 'states');
        }
        const rawDef = typeof raw === 'string' ? undefined : Array.isArray(raw) ? raw[index] : raw;
        transition.guards.forEach((name, position) => {
          if (!guards.includes(name))
            out.unknown(
              src,
              typeof rawDef?.guard === 'string' ? [...at, 'guard'] : [...at, 'guard', position],
              'guard',
              name,
              guards,
              'declared under guards:',
            );
        });
        transition.effects.forEach((name, position) => {
          if (!effects.includes(name))
            out.unknown(
              src,
              typeof rawDef?.actions === 'string' ? [...at, 'actions'] : [...at, 'actions', position],
              'effect',
              name,
              effects,
              'declared under effects:',
            );
        });
        if (transition.ensures !== undefined && !schemas.has(transition.ensures))
          out.unknown(src, [...at, 'ensures'], 'schema', transition.ensures, schemas.names(), 'declared in pipeline.yaml under schemas:');
        if (transition.idempotent && transition.target !== undefined && transition.target !== from) {
          out.error(src, [...at, 'idempotent'], 'config.idempotent_target', 'an idempotent repeat stays in its state: remove its target');
        }
        if (transition.idempotent && transition.effects.length) {
          out.error(src, [...at, 'actions'], 'config.idempotent_effects', 'an idempotent repeat writes nothing: remove its actions');
        }
      });
    }
  }

  // Fields the engine keeps itself: an effect that wrote one would give the proposal another's id
  // (the store would no longer find it under its own), change its status without a transition,
  // or break the key that makes a source proposed at most once.
  const kept = new Map<string, string>([
    ['id', "the proposal's id"],
    ['status', "the proposal's status, which only a transition's target sets"],
  ]);
  if (def.proposal.key) kept.set(def.proposal.key, "the proposal's key (pipeline.yaml proposal.key)");
  for (const [name, operations] of Object.entries(machine.effects ?? {})) {
    operations.forEach((op, index) => {
      const at = ['effects', name, index];
      const paths = [
        ['set', op.set, true],
        ['remove', op.remove, true],
        ['increment', op.increment, true],
        ['snapshot', op.snapshot, false],
        ['into', op.snapshot !== undefined ? op.into : undefined, true],
        ['restore', op.restore, true],
        ['from', op.restore !== undefined ? op.from : undefined, true],
      ] as const;
      for (const [key, fieldPath, writes] of paths) {
        if (fieldPath === undefined) continue;
        const problem = fieldPathProblem(fieldPath);
        if (problem) out.error(src, [...at, key], 'config.field_path', `${key}: ${problem}`, 'a field path is names joined by dots, e.g. candidate.applies_to');
        const field = fieldPath.split('.')[0]!;
        if (!problem && writes && kept.has(field))
          out.error(
            src,
            [...at, key],
            'config.reserved_field',
            `an effect cannot ${key === 'into' || key === 'restore' ? 'write' : key === 'from' ? 'remove' : key} "${fieldPath}": the engine keeps ${kept.get(field)}`,
            'keep what you need in a field of your own',
          );
      }
      if (op.when !== undefined && !guards.includes(op.when)) out.unknown(src, [...at, 'when'], 'guard', op.when, guards, 'declared under guards:');
      if (op.append !== undefined) {
        if (!ledgers.includes(op.append)) out.unknown(src, [...at, 'append'], 'ledger', op.append, ledgers, 'declared in pipeline.yaml under ledgers:');
        out.expressions(src, [...at, 'row'], op.row, { allow: ['$field', '$arg', '$now', '$value', '$template', '$count', '$lookup'] });
        if (op.key !== undefined && !Object.hasOwn(op.row, op.key))
          out.error(src, [...at, 'key'], 'config.row_key', `key "${op.key}" is not a field of the row`);
      }
      if (op.set !== undefined) out.expressions(src, [...at, 'to'], op.to, { allow: ['$field', '$arg', '$now', '$value', '$template', '$count', '$lookup'] });
      // The schema types `to` once for set (any value) and move alike; a move's `to` is a collection like its `move`.
      for (const [key, collection] of [
        ['move', op.move],
        ['to', op.move !== undefined ? op.to : undefined],
      ] as const) {
        if (typeof collection === 'string' && RESERVED_COLLECTIONS.includes(collection))
          out.error(
            src,
            [...at, key],
            'config.collection',
            `"${collection}" is reserved by the store, not a collection of entries`,
            'e.g. { move: approved, to: archived }',
          );
      }
      if (op.move !== undefined && (typeof op.to !== 'string' || !COLLECTION.test(op.to))) {
        out.error(
          src,
          [...at, 'to'],
          'config.collection',
          `a move's to names a collection (lower-case letters, digits, _ or -), got ${typeof op.to === 'string' ? `"${op.to}"` : (JSON.stringify(op.to) ?? String(op.to))}`,
          `e.g. { move: ${op.move}, to: archived }`,
        );
      }
    });
  }

  const reachable = reachableStates(machine);
  for (const state of states) {
    if (!reachable.has(state))
      out.error(
        src,
        ['states', state],
        'config.unreachable',
        `state "${state}" cannot be reached from the initial state "${machine.initial}"`,
        'add a transition that targets it, or remove it',
      );
  }
}

function checkStages(context: Context, out: Collector): void {
  const { sources } = context;
  const seen = new Map<string, number>();
  context.stages.forEach((stage, index) => {
    if (seen.has(stage.name))
      out.error(
        sources.pipeline,
        ['stages', index],
        'config.duplicate_stage',
        `two stages are named "${stage.name}"`,
        'give one of them a different name: key',
      );
    seen.set(stage.name, index);
    const src = sources.stages.get(stage.name);
    switch (stage.kind) {
      case 'transform':
        return checkTransform(context, stage, src, out);
      case 'review':
        return checkReview(context, stage, src, out);
      case 'judge':
        return checkJudge(context, stage, src, out);
      case 'promote':
        return checkPromote(context, stage, src, out);
    }
  });
}

function checkProvider(
  context: Context,
  src: SourceFile | undefined,
  path: (string | number)[],
  name: string,
  role: 'transform' | 'judge',
  out: Collector,
): void {
  const providers = context.def.providers ?? {};
  const provider = providers[name];
  if (!provider) {
    out.unknown(src, path, 'provider', name, Object.keys(providers), 'declared in pipeline.yaml under providers:');
    return;
  }
  const wrong = role === 'transform' ? provider.kind === 'checks' : provider.kind === 'map';
  if (wrong)
    out.error(
      src,
      path,
      'config.provider_kind',
      `provider "${name}" is a ${provider.kind} provider, which cannot ${role === 'transform' ? 'transform records' : 'judge'}`,
      role === 'transform' ? 'use a map, command, openai or anthropic provider' : 'use a checks, command, openai or anthropic provider',
    );
}

function checkTransform(context: Context, stage: TransformStageDef, src: SourceFile | undefined, out: Collector): void {
  checkProvider(context, src, ['provider'], stage.provider, 'transform', out);
  const ledgers = Object.keys(context.def.ledgers ?? {});
  if (!ledgers.includes(stage.declines.ledger))
    out.unknown(src, ['declines', 'ledger'], 'ledger', stage.declines.ledger, ledgers, 'declared in pipeline.yaml under ledgers:');
  if (stage.pregate) checkPatterns(out, src, ['pregate', 'patterns'], stage.pregate.patterns);
  for (const [field, expr] of Object.entries(stage.stitch ?? {}))
    out.expressions(src, ['stitch', field], expr, { allow: ['$field', '$value', '$template', '$first'] });
}

function checkReview(context: Context, stage: ReviewStageDef, src: SourceFile | undefined, out: Collector): void {
  const { machine } = context;
  const states = Object.keys(machine.states);
  const events = [...new Set(flattenTransitions(machine).map((t) => t.event))];
  const guards = Object.keys(machine.guards ?? {});
  if (stage.from !== undefined && !states.includes(stage.from)) out.unknown(src, ['from'], 'state', stage.from, states, 'states');
  for (const [name, command] of Object.entries(stage.commands)) {
    const at = ['commands', name];
    if (BUILT_IN_COMMANDS.includes(name))
      out.error(
        src,
        at,
        'config.command_clash',
        `review command "${name}" clashes with the built-in command of that name`,
        `built-in commands: ${BUILT_IN_COMMANDS.join(', ')}`,
      );
    if (!events.includes(command.event)) out.unknown(src, [...at, 'event'], 'event', command.event, events, 'events of the machine');
    (command.preconditions ?? []).forEach((guard, index) => {
      if (!guards.includes(guard)) out.unknown(src, [...at, 'preconditions', index], 'guard', guard, guards, 'guards of the machine');
    });
    const args = Object.keys(command.args ?? {});
    const spelled = new Map<string, string>();
    for (const arg of args) {
      const where = [...at, 'args', arg];
      if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(arg)) {
        out.error(src, where, 'config.argument_name', `argument "${arg}": a name is a letter followed by letters, digits, _ or -`);
        continue;
      }
      // snake_case is written with dashes on the command line (stages/review.ts optionName).
      const option = arg.replace(/_/g, '-');
      if (GLOBAL_OPTION_NAMES.includes(option) && arg !== command.positional)
        out.error(src, where, 'config.argument_clash', `argument "${arg}" would be --${option}, the global option`, 'give it another name');
      const twin = spelled.get(option);
      if (twin !== undefined && arg !== command.positional && twin !== command.positional)
        out.error(src, where, 'config.argument_clash', `arguments "${twin}" and "${arg}" would both be --${option}`, 'give one of them another name');
      spelled.set(option, arg);
      const type = (command.args?.[arg] as Record<string, unknown> | undefined)?.['type'];
      if (type !== undefined && !(typeof type === 'string' && REVIEW_ARGUMENT_TYPES.includes(type)))
        out.error(
          src,
          [...where, 'type'],
          'config.argument_type',
          `argument "${arg}" is of type ${JSON.stringify(type)}: a command line gives it one value, read as ${listWords(REVIEW_ARGUMENT_TYPES, 'or')}`,
        );
    }
    if (command.positional !== undefined && !args.includes(command.positional))
      out.unknown(src, [...at, 'positional'], 'argument', command.positional, args, 'arguments of this command');
    (command.required ?? []).forEach((arg, index) => {
      if (!args.includes(arg)) out.unknown(src, [...at, 'required', index], 'argument', arg, args, 'arguments of this command');
    });
  }
  for (const [index, choice] of (stage.walk?.choices ?? []).entries()) {
    if (choice.command !== 'quit' && !(choice.command in stage.commands))
      out.unknown(src, ['walk', 'choices', index, 'command'], 'command', choice.command, [...Object.keys(stage.commands), 'quit'], 'commands of this stage');
  }
}

function checkJudge(context: Context, stage: JudgeStageDef, src: SourceFile | undefined, out: Collector): void {
  const { machine, rubrics, schemas } = context;
  const states = Object.keys(machine.states);
  const transitions = flattenTransitions(machine);
  if (!states.includes(stage.from)) out.unknown(src, ['from'], 'state', stage.from, states, 'states');
  for (const outcome of ['pass', 'fail'] as const) {
    const event = stage.events[outcome];
    if (!transitions.some((t) => t.from === stage.from && t.event === event && t.target !== undefined)) {
      const accepted = transitions.filter((t) => t.from === stage.from && t.target !== undefined).map((t) => t.event);
      // An unknown state is reported above, with the states to choose from: no events to list here.
      let hint = didYouMean(event, accepted);
      if (hint === undefined && accepted.length) hint = `its events: ${listWords([...new Set(accepted)], 'and')}`;
      else if (hint === undefined && states.includes(stage.from)) hint = `"${stage.from}" has no outgoing transitions`;
      out.error(src, ['events', outcome], 'config.unknown_event', `state "${stage.from}" has no "${event}" transition`, hint);
    }
  }
  // A jury's two answers must lead apart: were a failing verdict to reach the state a passing one
  // does, the promotion that follows would put what the jury refused into the pool.
  // A guarded transition may route by the verdict itself (`args.verdict.passed`): only unguarded
  // ones surely take any verdict where they lead.
  const targetsOf = (event: string) =>
    new Set(transitions.filter((t) => t.from === stage.from && t.event === event && t.target !== undefined && t.guards.length === 0).map((t) => t.target!));
  const failTargets = targetsOf(stage.events.fail);
  // One event for both: the verdicts part only by guards — with none, both go to its first target.
  const routed = transitions.some((t) => t.from === stage.from && t.event === stage.events.fail && t.guards.length > 0);
  const shared =
    stage.events.pass === stage.events.fail
      ? routed
        ? undefined
        : [...failTargets][0]
      : [...targetsOf(stage.events.pass)].find((target) => failTargets.has(target));
  if (shared !== undefined)
    out.error(
      src,
      ['events', 'fail'],
      'config.judge_events',
      stage.events.pass === stage.events.fail
        ? `pass and fail are both "${stage.events.pass}": a failing verdict would lead where a passing one does ("${shared}")`
        : `"${stage.events.pass}" and "${stage.events.fail}" both lead from "${stage.from}" to "${shared}": a failing verdict would lead where a passing one does`,
      'give fail an event that leads to another state (e.g. reject → rejected)',
    );
  if (stage.revalidate !== undefined && !schemas.has(stage.revalidate))
    out.unknown(src, ['revalidate'], 'schema', stage.revalidate, schemas.names(), 'declared in pipeline.yaml under schemas:');
  const types = Object.keys(stage.judges);
  for (const [value, target] of Object.entries(stage.rubric.map)) {
    if (typeof target !== 'string') continue;
    const rubric = rubrics.get(target);
    if (!rubric) {
      out.unknown(src, ['rubric', 'map', value], 'rubric', target, rubrics.keys(), 'rubric ids');
      continue;
    }
    const rubricSource = context.sources.rubrics.get(rubric.id);
    rubric.judge_types.forEach((type, index) => {
      if (!types.includes(type))
        out.error(
          rubricSource,
          ['judge_types', index],
          'config.unmapped_judge',
          `judge type "${type}" has no provider in ${stage.file}`,
          `map it under judges: in ${stage.file}`,
        );
    });
  }
  for (const [type, provider] of Object.entries(stage.judges)) checkProvider(context, src, ['judges', type], provider, 'judge', out);
  for (const type of Object.keys(stage.prompts ?? {})) {
    if (!types.includes(type)) out.unknown(src, ['prompts', type], 'judge type', type, types, 'judge types under judges:');
  }
  if (stage.then !== undefined) {
    const then = context.stages.find((candidate) => candidate.name === stage.then);
    if (!then)
      out.unknown(
        src,
        ['then'],
        'stage',
        stage.then,
        context.stages.map((s) => s.name),
        'stages',
      );
    else if (then.kind !== 'promote')
      out.error(src, ['then'], 'config.then_kind', `stage "${stage.then}" is a ${then.kind} stage; then: names a promote stage`);
  }
}

/** Names that reach an object's prototype, never a field of a document. */
const PROTOTYPE_NAMES = new Set(['__proto__', 'prototype', 'constructor']);

/** What is wrong with a dotted field path from the configuration (undefined: nothing). */
export function fieldPathProblem(path: string): string | undefined {
  const parts = path.split('.');
  if (parts.some((part) => part === '')) return `"${path}" has an empty name between its dots`;
  const inherited = parts.find((part) => PROTOTYPE_NAMES.has(part));
  if (inherited !== undefined) return `"${path}" names "${inherited}", which every object inherits; it is never a field`;
  return undefined;
}

/** Is `expression` the proposal's id, `{ $field: id }`? */
function holdsProposalId(expression: unknown): boolean {
  return typeof expression === 'object' && expression !== null && Object.keys(expression).length === 1 && (expression as { $field?: unknown }).$field === 'id';
}

function checkPromote(context: Context, stage: PromoteStageDef, src: SourceFile | undefined, out: Collector): void {
  const states = Object.keys(context.machine.states);
  const ledgers = Object.keys(context.def.ledgers ?? {});
  const secrets = Object.keys(context.def.secrets ?? {});
  const rules: ExprRules = { allow: ['$field', '$now', '$value', '$template', '$count', '$lookup', '$hmac'], secrets };
  for (const [status, outcome] of Object.entries(stage.outcomes)) {
    const at = ['outcomes', status];
    if (!states.includes(status)) out.unknown(src, at, 'state', status, states, 'states');
    if (outcome.append !== undefined && !ledgers.includes(outcome.append))
      out.unknown(src, [...at, 'append'], 'ledger', outcome.append, ledgers, 'declared in pipeline.yaml under ledgers:');
    if (outcome.entry) out.expressions(src, [...at, 'entry'], outcome.entry, rules);
    if (outcome.row) {
      out.expressions(src, [...at, 'row'], outcome.row, rules);
      if (outcome.key !== undefined && !Object.hasOwn(outcome.row, outcome.key))
        out.error(src, [...at, 'key'], 'config.row_key', `key "${outcome.key}" is not a field of the row`);
      // The key is what keeps a record from being written twice, and every store looks for it
      // among the rows of the proposal (PostgreSQL) or of the whole ledger (files): the same rows
      // only when the key holds the proposal's id, as it is documented to.
      else if (outcome.key !== undefined && !holdsProposalId(outcome.row[outcome.key])) {
        const row = outcome.row;
        const holder = Object.keys(row).find((field) => holdsProposalId(row[field]));
        out.error(
          src,
          [...at, 'key'],
          'config.row_key',
          `key "${outcome.key}" must name the row field that holds the proposal's id ({ $field: id }), so that a record is never written twice for a proposal${holder !== undefined ? `: here that is key: ${holder}` : ''}`,
        );
      }
    }
    if (outcome.write !== undefined && RESERVED_COLLECTIONS.includes(outcome.write))
      out.error(src, [...at, 'write'], 'config.collection', `"${outcome.write}" is reserved by the store`);
  }
}

function checkRubrics({ rubrics, sources, stages }: Context, out: Collector): void {
  const used = new Set(
    stages.flatMap((stage) => (stage.kind === 'judge' ? Object.values(stage.rubric.map).filter((value): value is string => typeof value === 'string') : [])),
  );
  for (const rubric of rubrics.values()) {
    const src = sources.rubrics.get(rubric.id);
    if (rubric.gate_policy === 'unanimous' && rubric.judge_types.length <= 2) {
      out.warn(
        src,
        ['gate_policy'],
        'config.policy_indistinct',
        `unanimous on a panel of ${rubric.judge_types.length} cannot differ from majority`,
        'the two policies only disagree from three judges up',
      );
    }
    if (!used.has(rubric.id)) out.warn(src, ['id'], 'config.rubric_unused', `rubric "${rubric.id}" is not used by any judge stage`);
  }
}
