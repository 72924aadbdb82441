/**
 * The command line's window on the world, injected so commands can run in-process in tests.
 * Results go to stdout, messages to stderr; `--json` output is never mixed with prose.
 * `Output` is the one place text leaves the engine, so it is where text from proposals is escaped.
 */
import pc from 'picocolors';
import { formatIssue, PipelineError, type Issue } from '../errors.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../util/nesting.js';
import { escapeJsonText, escapeTerminal } from '../util/terminal.js';

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
  /**
   * Install a handler for Ctrl-C (SIGINT), or for each of `signals`; it is given the signal that
   * came (none: Ctrl-C). Returns a function that removes it.
   */
  onInterrupt(handler: (signal?: NodeJS.Signals) => void, signals?: readonly NodeJS.Signals[]): () => void;
  /** Did stdout's reader go away (`closed`: `pipeline list | head -1`, exit 0) or writing to it fail (`failed`, exit 1)? */
  stdoutLost?(): 'closed' | 'failed' | undefined;
  /**
   * Undefined when stdout takes more now; while it holds output its reader has not taken yet (a
   * slow reader, or one gone: `| head`), a promise that settles when it has drained or closed.
   */
  drained?(): Promise<void> | undefined;
}

/** Work that must not be cut short (a run, a served page) holds an interrupt handler while it lasts. */
let working = 0;
let stdoutLost: 'closed' | 'failed' | undefined;

/**
 * A closed pipe is how a reader says it has read enough, not a failure (SPEC §7): a closed stdout
 * ends the command at once with exit 0 — or, while a run is working, lets it finish silently so no
 * commit or provider process is cut off — and a closed stderr only silences messages. Any other
 * stdout error is one line on stderr and exit 1, never a stack trace.
 */
function watchClosedPipes(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (stdoutLost) return;
    stdoutLost = error.code === 'EPIPE' ? 'closed' : 'failed';
    if (stdoutLost === 'failed') process.stderr.write(`pipeline: cannot write to stdout: ${error.code ?? error.message}\n`);
    if (working === 0) process.exit(stdoutLost === 'closed' ? 0 : 1);
  });
  process.stderr.on('error', () => {
    // Nobody reads the messages any more; the command's results and exit code do not depend on them.
  });
}

let watching = false;

export function processIo(): Io {
  if (!watching) watchClosedPipes();
  watching = true;
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    cwd: process.cwd(),
    env: process.env,
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    onInterrupt(handler, signals = ['SIGINT']) {
      for (const signal of signals) process.on(signal, handler);
      working++;
      let removed = false;
      return () => {
        if (removed) return;
        removed = true;
        working--;
        for (const signal of signals) process.off(signal, handler);
      };
    },
    stdoutLost: () => stdoutLost,
    drained() {
      const out = process.stdout;
      if (!out.writableNeedDrain || stdoutLost) return undefined;
      return new Promise<void>((resolve) => {
        const done = () => {
          for (const event of ['drain', 'close', 'error']) out.off(event, done);
          resolve();
        };
        for (const event of ['drain', 'close', 'error']) out.once(event, done);
      });
    },
  };
}

export type Colors = ReturnType<typeof pc.createColors>;

/** JSON text for output (2-space indent, terminal-safe, parses to `value`), or undefined when it nests too deep to print. */
export function jsonOutputText(value: unknown): string | undefined {
  return nestsDeeperThan(value, MAX_PRINT_DEPTH) ? undefined : escapeJsonText(JSON.stringify(value, null, 2) ?? 'null');
}

/** The chunk size in which long JSON arrays are written (one write per element would be slow). */
const CHUNK = 64 * 1024;
/** Elements of a long JSON array stringified in one call (not one call and one re-indent each). */
const BATCH = 32;

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
    this.io.stdout.write(`${escapeTerminal(text)}\n`);
  }

  /** A machine-readable result on stdout; a value nested too deep to print is an error, not a crash. */
  data(value: unknown): void {
    const text = jsonOutputText(value);
    if (text === undefined) throw new PipelineError('output.too_deep', `the result is nested more than ${MAX_PRINT_DEPTH} levels deep and cannot be printed`);
    this.io.stdout.write(`${text}\n`);
  }

  /**
   * A JSON array on stdout, exactly as `data` would print it, leaving out the elements nested too
   * deep to print. Returns their indexes, for the caller to report by name.
   */
  dataArray(values: readonly unknown[]): number[] {
    const array = this.arrayWriter();
    const left: number[] = [];
    values.forEach((value, index) => {
      if (!array.push(value)) left.push(index);
    });
    array.end();
    return left;
  }

  /** A JSON array written to stdout as its elements come (see JsonArrayWriter). */
  arrayWriter(): JsonArrayWriter {
    return new JsonArrayWriter((text) => this.io.stdout.write(text));
  }

  /** A message for the person on stderr; `label`, when given, is the engine's own word before it, in colour. */
  note(text: string, label?: string): void {
    this.io.stderr.write(`${label === undefined ? '' : `${this.color.yellow(label)} `}${escapeTerminal(text)}\n`);
  }

  /** A heading on stderr (the walk's proposal header): a blank line, then the text in bold. */
  heading(text: string): void {
    this.io.stderr.write(`\n${this.color.bold(escapeTerminal(text))}\n`);
  }

  error(text: string, hint?: string): void {
    this.io.stderr.write(`${this.color.red('error:')} ${escapeTerminal(text)}\n${hint ? `  hint: ${escapeTerminal(hint)}\n` : ''}`);
  }

  refused(text: string, details: readonly string[] = []): void {
    this.io.stderr.write(`${this.color.red('refused:')} ${escapeTerminal(text)}\n${details.map((detail) => `  - ${escapeTerminal(detail)}\n`).join('')}`);
  }

  warn(text: string): void {
    this.io.stderr.write(`${this.color.yellow('warning:')} ${escapeTerminal(text)}\n`);
  }

  issue(issue: Issue): void {
    if (issue.severity === 'warning') this.warn(formatIssue({ ...issue, severity: 'error' }));
    else this.io.stderr.write(`${escapeTerminal(formatIssue(issue))}\n`);
  }
}

/**
 * A JSON array printed as its elements come, exactly as `data` would print the whole array:
 * a listing holds no more than a batch of elements at a time, and its first bytes leave before its
 * last file is read. Until `end()` the text written is an array without its closing bracket, so a
 * command that fails half-way (exit non-zero) never leaves what parses as a complete listing.
 */
export class JsonArrayWriter {
  private batch: unknown[] = [];
  private chunk = '';
  private started = false;

  constructor(private readonly write: (text: string) => void) {}

  /** Adds `value`; false (and `value` left out) when it nests too deep to print. */
  push(value: unknown): boolean {
    if (nestsDeeperThan(value, MAX_PRINT_DEPTH)) return false;
    this.batch.push(value);
    if (this.batch.length === BATCH) this.flush();
    return true;
  }

  /** Writes what is left and closes the array (`[]` when nothing was added). */
  end(): void {
    this.flush();
    this.write(this.started ? `${this.chunk}\n]\n` : '[]\n');
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    // `[\n  a,\n  b\n]`: between the brackets are the elements, indented as members of the whole array.
    const text = escapeJsonText(JSON.stringify(this.batch, null, 2));
    this.chunk += `${this.started ? ',\n' : '[\n'}${text.slice(2, -2)}`;
    this.started = true;
    this.batch = [];
    if (this.chunk.length >= CHUNK) {
      this.write(this.chunk);
      this.chunk = '';
    }
  }
}
