/**
 * Decide what an event does to a proposal, without touching the world: xstate's pure
 * `transition()` picks the transition (guards included), then the effects are applied to a copy.
 * The result is a commit to make, an idempotent repeat (nothing to write), or a refusal.
 */
import { createActor, type AnyActorScope, type AnyStateMachine } from 'xstate';
import { cloneJson } from '../util/clone.js';
import { jsonEqual, getPath, removePath } from '../util/json-path.js';
import { applyOperations, type EntryMove, type LedgerRow, type Proposal } from './effects.js';
import { effectOperations, STEP_ACTION, type Lifecycle, type Transition } from './machine.js';

export interface Refusal {
  kind: 'refused';
  code: string;
  message: string;
  /** Extra lines (schema findings). */
  details?: string[];
}

export interface Repeat {
  kind: 'repeat';
  transition: Transition;
  /** Did this event bring the proposal into its state (a repeat), or does it just stay (defer)? */
  entered: boolean;
}

export interface Commit {
  kind: 'commit';
  transition: Transition;
  from: string;
  to: string;
  event: string;
  proposal: Proposal;
  rows: LedgerRow[];
  moves: EntryMove[];
}

export type Decision = Refusal | Repeat | Commit;

export interface DecideInput {
  proposal: Proposal;
  event: string;
  args: Record<string, unknown>;
  now: string;
  /** Validate the resulting proposal against a named schema; returns problems (empty = valid). */
  ensure: (schema: string, proposal: Proposal) => string[];
  /** How the proposal is named in messages. */
  label: string;
}

/**
 * xstate's pure `transition()`, with the inert actor scope made once per machine instead of per
 * call: xstate builds a whole actor (and computes the machine's initial snapshot) for each call,
 * which cost more than the transition itself. Transitions are synchronous and the lifecycle
 * machine spawns no actors, so one scope serves every call; the actions are collected per call.
 */
const scopes = new WeakMap<AnyStateMachine, { scope: AnyActorScope; actions: unknown[] }>();

function pureTransition(machine: AnyStateMachine, snapshot: unknown, event: unknown): [{ value: unknown }, unknown[]] {
  let entry = scopes.get(machine);
  if (!entry) {
    const actions: unknown[] = [];
    const self = createActor(machine);
    const scope = {
      self,
      defer: () => {},
      id: '',
      logger: () => {},
      sessionId: '',
      stopChild: () => {},
      system: self.system,
      emit: () => {},
      actionExecutor: (action: unknown) => {
        actions.push(action);
      },
    } as unknown as AnyActorScope;
    entry = { scope, actions };
    scopes.set(machine, entry);
  }
  entry.actions.length = 0;
  const next = machine.transition(snapshot as never, event as never, entry.scope);
  const actions = entry.actions.slice();
  entry.actions.length = 0;
  return [next as { value: unknown }, actions];
}

export function guardPasses(lifecycle: Lifecycle, name: string, proposal: unknown, args: Record<string, unknown>): boolean {
  return lifecycle.guard(name)({ proposal, args }) === true;
}

/** The first guard (in declaration order) that fails, for the refusal message. */
export function firstFailingGuard(
  lifecycle: Lifecycle,
  candidates: readonly Transition[],
  proposal: unknown,
  args: Record<string, unknown>,
): string | undefined {
  for (const candidate of candidates) {
    for (const name of candidate.guards) if (!guardPasses(lifecycle, name, proposal, args)) return name;
  }
  return undefined;
}

function acceptedBy(lifecycle: Lifecycle, event: string): string[] {
  return [...new Set(lifecycle.transitions.filter((t) => t.event === event).map((t) => t.from))];
}

export function decide(lifecycle: Lifecycle, input: DecideInput): Decision {
  const { proposal, event, args } = input;
  const status = proposal['status'];
  if (typeof status !== 'string' || !lifecycle.states.includes(status)) {
    return { kind: 'refused', code: 'status_unknown', message: `${input.label} has status ${JSON.stringify(status)}, which the lifecycle does not know` };
  }
  const [next, actions] = pureTransition(lifecycle.machine, lifecycle.snapshot(status), { type: event, args, proposal });
  const step = (actions as { type: string; params?: { id?: number } }[]).find((action) => action.type === STEP_ACTION);
  if (!step || typeof step.params?.id !== 'number') {
    const candidates = lifecycle.transitions.filter((t) => t.from === status && t.event === event);
    if (candidates.length === 0) {
      const from = acceptedBy(lifecycle, event);
      return {
        kind: 'refused',
        code: 'status',
        message: `${input.label} is ${status}; ${event} applies only to ${from.length ? from.join(' or ') : 'no'} proposals`,
      };
    }
    const failing = firstFailingGuard(lifecycle, candidates, proposal, args);
    const message = failing ? lifecycle.def.guards?.[failing]?.message : undefined;
    return { kind: 'refused', code: 'guard', message: `${input.label} (${status}): ${message ?? `${event} is not allowed`}` };
  }
  const taken = lifecycle.transitions[step.params.id]!;
  if (taken.idempotent) return decideRepeat(lifecycle, input, status, taken);

  const effects = applyOperations(proposal, effectOperations(lifecycle, taken.effects), {
    args,
    now: input.now,
    guard: (name, current, eventArgs) => guardPasses(lifecycle, name, current, eventArgs),
  });
  const to = String(next.value);
  effects.proposal['status'] = to;
  if (taken.ensures) {
    const problems = input.ensure(taken.ensures, effects.proposal);
    if (problems.length) {
      return {
        kind: 'refused',
        code: 'ensures',
        message: `${input.label} (${status}): the result of ${event} fails the ${taken.ensures} schema`,
        details: problems,
      };
    }
  }
  return { kind: 'commit', transition: taken, from: status, to, event, proposal: effects.proposal, rows: effects.rows, moves: effects.moves };
}

/**
 * A declared repeat succeeds when the event would change nothing: the effects of the transition
 * that brought the proposal here on the same event, applied again, leave the compared fields
 * (`same`, or everything but clock stamps) as they are.
 */
function decideRepeat(lifecycle: Lifecycle, input: DecideInput, status: string, taken: Transition): Decision {
  const entering = lifecycle.transitions.find((t) => t.event === input.event && t.target === status && t.from !== status);
  if (!entering) return { kind: 'repeat', transition: taken, entered: false };
  const replay = applyOperations(input.proposal, effectOperations(lifecycle, entering.effects), {
    args: input.args,
    now: input.now,
    replay: true,
    guard: (name, current, eventArgs) => guardPasses(lifecycle, name, current, eventArgs),
  });
  replay.proposal['status'] = status;
  const same = taken.idempotent?.same;
  let unchanged: boolean;
  if (same) {
    unchanged = same.every((field) => jsonEqual(getPath(replay.proposal, field), getPath(input.proposal, field)));
  } else {
    const before = cloneJson(input.proposal);
    for (const field of replay.clockFields) {
      removePath(before, field);
      removePath(replay.proposal, field);
    }
    unchanged = jsonEqual(sortKeys(before), sortKeys(replay.proposal));
  }
  if (!unchanged) {
    return {
      kind: 'refused',
      code: 'repeat_differs',
      message: `${input.label} is already ${status} ${taken.message ?? 'with different values'}`,
    };
  }
  return { kind: 'repeat', transition: taken, entered: true };
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as object)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
