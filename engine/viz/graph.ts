/**
 * The visualizer's graph model: the lifecycle as plain data (states with their live counts,
 * transitions, idempotent repeats). Every renderer reads this and nothing else, so a new format
 * never needs to know about xstate, the YAML or the store.
 */
import type { Lifecycle, Transition } from '../lifecycle/machine.js';

export interface VizState {
  id: string;
  initial: boolean;
  /** No transition to another state (the engine's definition, not `type: final`). */
  terminal: boolean;
  description: string | null;
  tags: string[];
  count: number;
}

export interface VizTransition {
  from: string;
  to: string;
  event: string;
  /** Guard names; several that must all pass are joined with " & ", alternatives with " | ". */
  guard: string | null;
  /** The guards' refusal messages from the machine, in the same order, joined with "; ". */
  message: string | null;
  description: string | null;
}

/** A targetless transition: the event is accepted in `state` and changes nothing. */
export interface VizRepeat {
  state: string;
  event: string;
  description: string | null;
}

export interface VizGraph {
  id: string;
  description: string | null;
  states: VizState[];
  transitions: VizTransition[];
  repeats: VizRepeat[];
}

/** The `--format json` document (SPEC §8): exactly these keys, in this order. */
export interface VizJson {
  states: { id: string; initial: boolean; terminal: boolean; description: string | null; tags: string[]; count: number }[];
  transitions: { from: string; to: string; event: string; guard: string | null; message: string | null }[];
}

function guardOf(transition: Transition): string {
  return transition.guards.join(' & ');
}

function messageOf(lifecycle: Lifecycle, transition: Transition): string[] {
  return transition.guards.map((name) => lifecycle.def.guards?.[name]?.message).filter((m): m is string => typeof m === 'string');
}

/**
 * Build the graph of a lifecycle, in machine order, with `counts` per state (missing = 0).
 * One transition per (from, event, target): guarded alternatives to the same target merge, and an
 * unguarded alternative makes the merged transition unguarded (it can always be taken).
 */
export function buildGraph(lifecycle: Lifecycle, counts: Readonly<Record<string, number>> = {}): VizGraph {
  const { def } = lifecycle;
  const states: VizState[] = lifecycle.states.map((id) => {
    const state = def.states[id];
    return {
      id,
      initial: id === lifecycle.initial,
      terminal: lifecycle.terminal.has(id),
      description: state?.description ?? null,
      tags: [...(state?.tags ?? [])],
      count: counts[id] ?? 0,
    };
  });

  const grouped = new Map<string, Transition[]>();
  const repeats: VizRepeat[] = [];
  for (const transition of lifecycle.transitions) {
    if (transition.target === undefined) {
      if (!repeats.some((r) => r.state === transition.from && r.event === transition.event)) {
        repeats.push({ state: transition.from, event: transition.event, description: transition.description ?? null });
      }
      continue;
    }
    const key = JSON.stringify([transition.from, transition.event, transition.target]);
    grouped.set(key, [...(grouped.get(key) ?? []), transition]);
  }

  const transitions: VizTransition[] = [...grouped.values()].map((alternatives) => {
    const first = alternatives[0]!;
    const unguarded = alternatives.some((t) => t.guards.length === 0);
    const guards = unguarded ? [] : [...new Set(alternatives.map(guardOf))];
    const messages = unguarded ? [] : [...new Set(alternatives.flatMap((t) => messageOf(lifecycle, t)))];
    return {
      from: first.from,
      to: first.target!,
      event: first.event,
      guard: guards.length ? guards.join(' | ') : null,
      message: messages.length ? messages.join('; ') : null,
      description: alternatives.map((t) => t.description).find((d) => d !== undefined) ?? null,
    };
  });

  return { id: def.id, description: def.description ?? null, states, transitions, repeats };
}

/** The same graph with other counts (the served page refreshes only these). */
export function withCounts(graph: VizGraph, counts: Readonly<Record<string, number>>): VizGraph {
  return { ...graph, states: graph.states.map((state) => ({ ...state, count: counts[state.id] ?? 0 })) };
}

/** Project the graph onto the `--format json` shape; repeats are not transitions, so they are left out. */
export function toJson(graph: VizGraph): VizJson {
  return {
    states: graph.states.map(({ id, initial, terminal, description, tags, count }) => ({ id, initial, terminal, description, tags, count })),
    transitions: graph.transitions.map(({ from, to, event, guard, message }) => ({ from, to, event, guard, message })),
  };
}

/** `--format json`: the document, pretty-printed, with a trailing newline. */
export function renderJson(graph: VizGraph): string {
  return `${JSON.stringify(toJson(graph), null, 2)}\n`;
}

/** An edge's label in every diagram: `event [guard]`. */
export function edgeLabel(transition: Pick<VizTransition, 'event' | 'guard'>): string {
  return transition.guard ? `${transition.event} [${transition.guard}]` : transition.event;
}

/** The repeats of each state that has any, in machine order: one self-loop each in dot and mermaid. */
export function repeatsByState(graph: VizGraph): { state: string; events: string[] }[] {
  return graph.states
    .map((state) => ({ state: state.id, events: graph.repeats.filter((repeat) => repeat.state === state.id).map((repeat) => repeat.event) }))
    .filter((group) => group.events.length > 0);
}

/** A self-loop's label for a state's repeats: the events and a mark that nothing changes. */
export function repeatLabel(events: readonly string[]): string {
  return `${events.join(', ')} (no change)`;
}
