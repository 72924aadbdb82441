/**
 * One error type for the whole engine: a stable code, a message, an optional position
 * (file:line:col) and a hint. Validators return `Issue[]`; only the shell decides to stop.
 */

export type Severity = 'error' | 'warning';

export interface Position {
  file: string;
  line: number;
  col: number;
}

export interface Issue {
  code: string;
  message: string;
  severity: Severity;
  /** Where the problem is: a file position, or just a file. */
  file?: string;
  line?: number;
  col?: number;
  hint?: string;
}

/** Exit codes of the command line (SPEC §7). */
export const EXIT = { ok: 0, refused: 1, unjudged: 2, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class PipelineError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;
  readonly issues: Issue[];

  constructor(code: string, message: string, options: { exitCode?: ExitCode; hint?: string; issues?: Issue[] } = {}) {
    super(message);
    this.name = 'PipelineError';
    this.code = code;
    this.exitCode = options.exitCode ?? EXIT.refused;
    this.hint = options.hint;
    this.issues = options.issues ?? [];
  }
}

/**
 * Work another live process holds past the wait (a command stopped mid-commit): nothing was done,
 * and it is worth trying again — exit 2, never an internal error; a batch run leaves the unit for
 * a retry, as one another run holds (`isBusy`).
 */
export class Busy extends PipelineError {
  constructor(message: string) {
    super('EBUSY', message, { exitCode: EXIT.unjudged, hint: 'another process holds it: run this again once that process is done' });
    this.name = 'Busy';
  }
}

/**
 * Is `error` a `Busy` (by its name: a second copy of the engine in the process — a bundle beside
 * the modules — has a class of its own)? A file system's own EBUSY is not: nothing holds the work.
 */
export function isBusy(error: unknown): boolean {
  return error instanceof Error && error.name === 'Busy';
}

/** Render an issue as `file:line:col: message` (plus an indented hint line). */
export function formatIssue(issue: Issue): string {
  const where = issue.file ? (issue.line !== undefined ? `${issue.file}:${issue.line}:${issue.col ?? 1}: ` : `${issue.file}: `) : '';
  const prefix = issue.severity === 'warning' ? 'warning: ' : '';
  const hint = issue.hint ? `\n  hint: ${issue.hint}` : '';
  return `${prefix}${where}${issue.message}${hint}`;
}

export function isPipelineError(error: unknown): error is PipelineError {
  return error instanceof PipelineError;
}
