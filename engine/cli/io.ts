/**
 * The command line's window on the world, injected so commands can run in-process in tests.
 * Results go to stdout, messages to stderr; `--json` output is never mixed with prose.
 */
import pc from 'picocolors';
import { formatIssue, type Issue } from '../errors.js';

export interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Is there a person at a terminal (stdin and stderr are TTYs)? */
  interactive: boolean;
  /** Can stderr take a progress bar? */
  stderrIsTTY: boolean;
  /** Install a Ctrl-C handler; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
}

export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    cwd: process.cwd(),
    env: process.env,
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    onInterrupt(handler) {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
  };
}

export type Colors = ReturnType<typeof pc.createColors>;

export class Output {
  readonly json: boolean;
  readonly color: Colors;
  constructor(
    readonly io: Io,
    options: { json: boolean },
  ) {
    this.json = options.json;
    const enabled = io.stderrIsTTY && io.env['NO_COLOR'] === undefined && io.env['TERM'] !== 'dumb';
    this.color = pc.createColors(enabled);
  }

  /** A result line on stdout. */
  line(text = ''): void {
    this.io.stdout.write(`${text}\n`);
  }

  /** A machine-readable result on stdout. */
  data(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A message for the person on stderr. */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  error(text: string, hint?: string): void {
    this.io.stderr.write(`${this.color.red('error:')} ${text}\n${hint ? `  hint: ${hint}\n` : ''}`);
  }

  refused(text: string, details: readonly string[] = []): void {
    this.io.stderr.write(`${this.color.red('refused:')} ${text}\n${details.map((detail) => `  - ${detail}\n`).join('')}`);
  }

  warn(text: string): void {
    this.io.stderr.write(`${this.color.yellow('warning:')} ${text}\n`);
  }

  issue(issue: Issue): void {
    if (issue.severity === 'warning') this.warn(formatIssue({ ...issue, severity: 'error' }));
    else this.io.stderr.write(`${formatIssue(issue)}\n`);
  }
}
