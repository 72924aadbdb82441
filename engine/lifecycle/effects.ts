/**
 * Effects: the generic operations a transition applies to a proposal — set, remove, snapshot,
 * restore, append a ledger row — each optionally conditional on a guard. Pure: returns the next
 * proposal and the rows to append; nothing is written here.
 */
import type { Operation } from '../config/types.js';
import { evaluate, operatorOf } from '../expr/evaluate.js';
import { getPath, hasPath, isObject, removePath, setPath } from '../util/json-path.js';

export type Proposal = Record<string, unknown>;

export interface LedgerRow {
  ledger: string;
  row: Record<string, unknown>;
  /** The row field that names the proposal, when declared (used to repair a missing row). */
  key?: string;
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
  /** Fields set straight from the clock (ignored when deciding whether a repeat changes anything). */
  clockFields: string[];
}

export function applyOperations(proposal: Proposal, operations: readonly Operation[], context: EffectContext): EffectResult {
  const next = structuredClone(proposal);
  const rows: LedgerRow[] = [];
  const clockFields: string[] = [];
  for (const op of operations) {
    if (op.when !== undefined && !context.guard(op.when, next, context.args)) continue;
    if ('set' in op) {
      const fromClock = operatorOf(op.to) === '$now';
      if (fromClock) clockFields.push(op.set);
      if (fromClock && context.replay && hasPath(next, op.set)) continue;
      const { value } = evaluate(op.to, { root: next, args: context.args, now: context.now });
      if (value === undefined) removePath(next, op.set);
      else setPath(next, op.set, value);
    } else if ('remove' in op) {
      removePath(next, op.remove);
    } else if ('snapshot' in op) {
      const value = getPath(next, op.snapshot);
      if (value !== undefined) setPath(next, op.into, structuredClone(value));
    } else if ('restore' in op) {
      if (hasPath(next, op.from)) {
        setPath(next, op.restore, structuredClone(getPath(next, op.from)));
        removePath(next, op.from);
      }
    } else if ('append' in op) {
      const { value } = evaluate(op.row, { root: next, args: context.args, now: context.now });
      rows.push({ ledger: op.append, row: isObject(value) ? value : {}, ...(op.key ? { key: op.key } : {}) });
    }
  }
  return { proposal: next, rows, clockFields };
}
