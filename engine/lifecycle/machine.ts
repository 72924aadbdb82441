/**
 * Build the lifecycle from its YAML definition: an xstate v5 machine (`setup` + `createMachine`)
 * whose guards evaluate JSON Schemas and whose actions are effect names, plus the flattened
 * transition table the engine and the visualizer read.
 */
import { and, createMachine, setup, type AnyStateMachine } from 'xstate';
import type { ValidateFunction } from 'ajv';
import type { MachineDef, Operation, TransitionDef } from '../config/types.js';

export interface Transition {
  /** Index in `Lifecycle.transitions`. */
  id: number;
  from: string;
  event: string;
  /** Undefined for a targetless (idempotent) transition. */
  target?: string;
  guards: string[];
  effects: string[];
  ensures?: string;
  idempotent?: { same?: string[] };
  message?: string;
  description?: string;
  /** Event arguments recorded in the audit row. */
  recordArgs?: string[];
}

export interface Lifecycle {
  def: MachineDef;
  machine: AnyStateMachine;
  /** States in declaration order. */
  states: string[];
  initial: string;
  /** States with no transition to another state. */
  terminal: Set<string>;
  events: string[];
  transitions: Transition[];
  /** The validator of a named guard (compiled on first use). */
  guard: (name: string) => ValidateFunction;
  /** The machine snapshot of a state (`machine.resolveState`), resolved once per state. */
  snapshot: (state: string) => ReturnType<AnyStateMachine['resolveState']>;
}

export const STEP_ACTION = 'pipeline.step';

export function normalizeTransitions(from: string, event: string, raw: string | TransitionDef | TransitionDef[]): Omit<Transition, 'id'>[] {
  const list: TransitionDef[] = typeof raw === 'string' ? [{ target: raw }] : Array.isArray(raw) ? raw : [raw];
  return list.map((def) => ({
    from,
    event,
    ...(def.target !== undefined ? { target: def.target } : {}),
    guards: def.guard === undefined ? [] : ([] as string[]).concat(def.guard),
    effects: def.actions === undefined ? [] : ([] as string[]).concat(def.actions),
    ...(def.ensures !== undefined ? { ensures: def.ensures } : {}),
    ...(def.idempotent !== undefined ? { idempotent: def.idempotent === true ? {} : def.idempotent } : {}),
    ...(def.message !== undefined ? { message: def.message } : {}),
    ...(def.description !== undefined ? { description: def.description } : {}),
    ...(def.record_args !== undefined ? { recordArgs: def.record_args } : {}),
  }));
}

export function flattenTransitions(def: MachineDef): Transition[] {
  const out: Transition[] = [];
  for (const [from, state] of Object.entries(def.states)) {
    for (const [event, raw] of Object.entries(state.on ?? {})) {
      for (const transition of normalizeTransitions(from, event, raw)) out.push({ id: out.length, ...transition });
    }
  }
  return out;
}

/** Build the xstate machine. Guard validators must cover every guard name (checked at load). */
export function buildLifecycle(def: MachineDef, guard: (name: string) => ValidateFunction): Lifecycle {
  const transitions = flattenTransitions(def);
  // The proposal travels with the event, so a state's snapshot does not depend on it and can be
  // resolved once per state.
  const guards: Record<string, (input: { event: { proposal?: unknown; args?: unknown } }) => boolean> = {};
  for (const name of Object.keys(def.guards ?? {})) {
    guards[name] = ({ event }) => guard(name)({ proposal: event.proposal, args: event.args ?? {} }) === true;
  }
  const actions: Record<string, () => void> = { [STEP_ACTION]: () => {} };
  for (const name of Object.keys(def.effects ?? {})) actions[name] = () => {};

  const states: Record<string, object> = {};
  for (const [name, state] of Object.entries(def.states)) {
    // By event, in a Map: an event may be named like a property every object inherits (`constructor`).
    const on = new Map<string, object[]>();
    for (const transition of transitions.filter((t) => t.from === name)) {
      const config: Record<string, unknown> = {
        actions: [{ type: STEP_ACTION, params: { id: transition.id } }, ...transition.effects],
      };
      if (transition.target !== undefined) config['target'] = transition.target;
      if (transition.guards.length === 1) config['guard'] = transition.guards[0];
      else if (transition.guards.length > 1) config['guard'] = and(transition.guards);
      const configs = on.get(transition.event) ?? [];
      configs.push(config);
      on.set(transition.event, configs);
    }
    states[name] = {
      ...(state.description !== undefined ? { description: state.description } : {}),
      ...(state.tags !== undefined ? { tags: state.tags } : {}),
      ...(state.type === 'final' ? { type: 'final' } : {}),
      on: Object.fromEntries(on),
    };
  }
  const machine = setup({
    types: {} as { context: Record<string, never>; events: { type: string; args?: Record<string, unknown>; proposal?: unknown } },
    guards: guards as never,
    actions: actions as never,
  }).createMachine({
    id: def.id,
    initial: def.initial,
    context: {},
    ...(def.description !== undefined ? { description: def.description } : {}),
    states: states as never,
  });

  const names = Object.keys(def.states);
  const terminal = new Set(names.filter((name) => !transitions.some((t) => t.from === name && t.target !== undefined && t.target !== name)));
  const events = [...new Set(transitions.map((t) => t.event))];
  const snapshots = new Map<string, ReturnType<AnyStateMachine['resolveState']>>();
  const snapshot = (state: string) => {
    let resolved = snapshots.get(state);
    if (!resolved) {
      resolved = (machine as unknown as AnyStateMachine).resolveState({ value: state, context: {} });
      snapshots.set(state, resolved);
    }
    return resolved;
  };
  return { def, machine: machine as unknown as AnyStateMachine, states: names, initial: def.initial, terminal, events, transitions, guard, snapshot };
}

export function effectOperations(lifecycle: Lifecycle, names: readonly string[]): Operation[] {
  return names.flatMap((name) => lifecycle.def.effects?.[name] ?? []);
}

/** States reachable from the initial state. */
export function reachableStates(def: MachineDef): Set<string> {
  const transitions = flattenTransitions(def);
  const seen = new Set<string>([def.initial]);
  const queue = [def.initial];
  while (queue.length) {
    const state = queue.shift()!;
    for (const t of transitions) {
      if (t.from === state && t.target !== undefined && !seen.has(t.target)) {
        seen.add(t.target);
        queue.push(t.target);
      }
    }
  }
  return seen;
}
