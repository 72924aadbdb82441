/**
 * What `list` shows (SPEC §7): `--where FIELD=VALUE` and `--grep TEXT` filters, and the words a
 * text row adds after the title (a status when several are listed; a verdict's reason). Pure.
 */
import type { Pipeline } from '../config/load.js';
import { getPath, isObject } from '../util/json-path.js';
import { UsageError } from './args.js';

export interface Condition {
  field: string;
  value: string;
}

/** Parse `--where` values (`FIELD=VALUE`, FIELD a dotted path); anything else is a usage error. */
export function parseWhere(values: readonly string[], usage: string): Condition[] {
  return values.map((text) => {
    const eq = text.indexOf('=');
    const field = eq < 0 ? '' : text.slice(0, eq).trim();
    if (eq < 0 || field === '' || field.split('.').some((part) => part === '')) {
      throw new UsageError(`--where needs FIELD=VALUE with FIELD a dotted path (e.g. status=pending), got ${JSON.stringify(text)}`, `usage: ${usage}`);
    }
    return { field, value: text.slice(eq + 1) };
  });
}

/** A scalar as `--where` compares it: strings as they are, other scalars as JSON (`true`, `3`, `null`). */
function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return JSON.stringify(value);
  return undefined;
}

/** Does the field hold VALUE? A list holds it when one of its items does. */
export function fieldHolds(proposal: unknown, condition: Condition): boolean {
  const value = getPath(proposal, condition.field);
  if (Array.isArray(value)) return value.some((item) => scalarText(item) === condition.value);
  return scalarText(value) === condition.value;
}

/** Every condition holds, and the title contains `grep` in any case. */
export function matches(proposal: unknown, where: readonly Condition[], grep: { field: string; text: string } | undefined): boolean {
  if (!where.every((condition) => fieldHolds(proposal, condition))) return false;
  if (!grep) return true;
  const title = getPath(proposal, grep.field);
  return typeof title === 'string' && title.toLowerCase().includes(grep.text.toLowerCase());
}

/**
 * Why a proposal is where it is, for a text row: the recorded reason of the judge stage whose
 * failing event leads into its status (`below_threshold`, `criterion_floor: clarity`).
 */
export function decisionReason(pipeline: Pipeline, proposal: Record<string, unknown>): string | undefined {
  const status = proposal['status'];
  for (const stage of pipeline.stages) {
    if (stage.kind !== 'judge') continue;
    const failed = pipeline.lifecycle.transitions.find((t) => t.from === stage.from && t.event === stage.events.fail)?.target;
    if (failed !== status) continue;
    const verdict = getPath(proposal, stage.verdict);
    if (!isObject(verdict) || typeof verdict['reason'] !== 'string') continue;
    return typeof verdict['failed_criterion'] === 'string' ? `${verdict['reason']}: ${verdict['failed_criterion']}` : verdict['reason'];
  }
  return undefined;
}

/** The words after a row's title: `(rejected: below_threshold)`, or the status alone when states are mixed. */
export function rowSuffix(pipeline: Pipeline, proposal: Record<string, unknown>, showStatus: boolean): string {
  const reason = decisionReason(pipeline, proposal);
  const status = String(proposal['status']);
  if (reason !== undefined) return `(${status}: ${reason})`;
  return showStatus ? `(${status})` : '';
}
