/** What a command did to one proposal. Data, so the shell decides how to print and exit. */
import type { Proposal } from './lifecycle/effects.js';
import type { AuditRow } from './store/types.js';

export type Outcome =
  /** `version` is what the store now holds: a next step may commit on top of it without reading it again. */
  | { kind: 'committed'; id: string; event: string; from: string | null; to: string; proposal: Proposal; version: string; audit: AuditRow[] }
  | { kind: 'unchanged'; id: string; event: string; status: string; proposal: Proposal; message: string }
  | { kind: 'refused'; id?: string; code: string; message: string; details?: string[] }
  | { kind: 'unjudged'; id: string; reason: string };

export function refused(code: string, message: string, details?: string[], id?: string): Outcome {
  return { kind: 'refused', code, message, ...(details && details.length ? { details } : {}), ...(id ? { id } : {}) };
}

/** The one note for a proposal file that cannot be read: said by every command that meets one, which leaves it as it is. */
export function malformedFileNote(id: string, reason?: string): string {
  return `${id}: the proposal file is ${reason === undefined ? 'empty, truncated or not a JSON object' : `malformed (${reason})`} — skipped, left as it is`;
}
