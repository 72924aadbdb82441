/**
 * Effects: the generic operations a transition applies to a proposal — set, remove, increment,
 * snapshot, restore, append a ledger row, move the proposal's entry between collections — each
 * optionally conditional on a guard. Pure: returns the next proposal and the rows and entry
 * moves to commit with it; nothing is written here.
 */
import type { Operation } from '../config/types.js';
import { evaluate, operatorOf } from '../expr/evaluate.js';
import { cloneJson } from '../util/clone.js';
import { countFrom, getPath, hasPath, isObject, removePath, setPath } from '../util/json-path.js';

export type Proposal = Record<string, unknown>;

export interface LedgerRow {
  ledger: string;
  row: Record<string, unknown>;
}

/** An entry of the proposal moved from one collection to another (e.g. the pool to an archive). */
export interface EntryMove {
  from: string;
  to: string;
}

export interface EffectContext {
  args: Record<string, unknown>;
  now: string;
  /** Evaluate a named guard against { proposal, args }. */
  guard: (name: string, proposal: Proposal, args: Record<string, unknown>) => boolean;
  /** Replaying a transition already made (a repeat): clock stamps keep the time they have. */
  replay?: boolean;
}

export interface EffectResult {
  proposal: Proposal;
  rows: LedgerRow[];
  moves: EntryMove[];
  /** Fields set straight from the clock (ignored when deciding whether a repeat changes anything). */
  clockFields: string[];
}

export function applyOperations(proposal: Proposal, operations: readonly Operation[], context: EffectContext): EffectResult {
  const next = cloneJson(proposal);
  const rows: LedgerRow[] = [];
  const moves: EntryMove[] = [];
  const clockFields: string[] = [];
  for (const op of operations) {
    if (op.when !== undefined && !context.guard(op.when, next, context.args)) continue;
    if (op.set !== undefined) {
      const fromClock = operatorOf(op.to) === '$now';
      if (fromClock) clockFields.push(op.set);
      if (fromClock && context.replay && hasPath(next, op.set)) continue;
      const { value } = evaluate(op.to, { root: next, args: context.args, now: context.now });
      if (value === undefined) removePath(next, op.set);
      else setPath(next, op.set, value);
    } else if (op.remove !== undefined) {
      removePath(next, op.remove);
    } else if (op.increment !== undefined) {
      // An absent counter is 0, as is one that is not a whole number ≥ 0 (read the same by the pool:
      // `countFrom`); a counter never goes below 0 (a guard refuses that first).
      setPath(next, op.increment, Math.max(0, countFrom(getPath(next, op.increment)) + (op.by ?? 1)));
    } else if (op.move !== undefined) {
      // `to` is typed with set's any value; the load checks a move's is a collection name.
      moves.push({ from: op.move, to: String(op.to) });
    } else if (op.snapshot !== undefined) {
      const value = getPath(next, op.snapshot);
      if (value !== undefined) setPath(next, op.into, cloneJson(value));
    } else if (op.restore !== undefined) {
      if (hasPath(next, op.from)) {
        setPath(next, op.restore, cloneJson(getPath(next, op.from)));
        removePath(next, op.from);
      }
    } else if (op.append !== undefined) {
      const { value } = evaluate(op.row, { root: next, args: context.args, now: context.now });
      rows.push({ ledger: op.append, row: isObject(value) ? value : {} });
    }
  }
  return { proposal: next, rows, moves, clockFields };
}
