/**
 * `command` provider: runs a program (no shell), writes the rendered prompt to its stdin and takes
 * stdout as the answer. Anything but a clean exit with an answer — a missing program, a non-zero
 * exit, a timeout, an over-large answer — is an outage, never an answer.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants } from 'node:os';
import type { CommandProviderConfig } from '../config/types.js';
import type { ModelSettings } from './index.js';
import { withRetries, type CallAttempt, type RetryPolicy } from './retry.js';
import { maskSecrets } from './secret-scan.js';
import type { Provider, ProviderRequest } from './types.js';
import { UNKNOWN_USAGE } from './types.js';

/** How much of stderr an outage quotes: enough to see why, short enough for one line. */
const STDERR_TAIL = 200;
/** Spawn failures that another try cannot fix. */
const PERMANENT_SPAWN_ERRORS = new Set(['ENOENT', 'EACCES', 'ENOTDIR', 'EISDIR']);

export type ParsedCommand = { ok: true; argv: string[] } | { ok: false; reason: string };

/** Split `prog args` into argv like a POSIX shell would for plain words and '…' / "…" quotes. Pure. */
export function parseCommandLine(command: string): ParsedCommand {
  const argv: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const char = command[i]!;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === '\\' && (command[i + 1] === '"' || command[i + 1] === '\\')) word += command[++i];
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === '\\' && i + 1 < command.length) {
      word += command[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) argv.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) return { ok: false, reason: `unterminated ${quote} quote in "${command}"` };
  if (inWord) argv.push(word);
  if (argv.length === 0) return { ok: false, reason: 'the command is empty' };
  return { ok: true, argv };
}

/** What every child gets from the pipeline's environment (SPEC §6); a provider adds names under `env:`. */
export const BASE_CHILD_ENV = ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR'] as const;
/** What the engine tells the child about the call. */
export const CALL_ENV = ['PIPELINE_STAGE', 'PIPELINE_JUDGE_TYPE', 'PIPELINE_PROPOSAL_ID'] as const;

/**
 * The child's whole environment: the base variables and the names the provider lists under `env:`,
 * from the pipeline's environment, then the call's PIPELINE_* variables. Nothing else — a judge
 * program gets no API key or token it was not given by name. Pure.
 */
export function childEnv(settings: ModelSettings, def: Pick<CommandProviderConfig, 'env'>, request: ProviderRequest): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of [...BASE_CHILD_ENV, ...(def.env ?? [])]) {
    const value = settings.env[name];
    if (typeof value === 'string') env[name] = value;
  }
  for (const name of CALL_ENV) {
    const value = request.env[name];
    if (typeof value === 'string') env[name] = value;
  }
  return env;
}

/**
 * Process groups still running. They are detached from the engine (a timeout kills a whole group),
 * so nothing kills them for us: they are killed when the engine exits, and on SIGTERM or SIGHUP.
 * A run listens for those itself — it aborts its calls (which kills them) and stops as on Ctrl-C,
 * printing its summary — so the process is ended here, with 128 + the signal's number, only when
 * nobody else listens: the signal would have ended it anyway, leaving paid programs running.
 */
const live = new Set<number>();
let hooksInstalled = false;
const ENDING_SIGNALS = ['SIGTERM', 'SIGHUP'] as const;

function killLive(): void {
  for (const group of live) killGroup(group);
}

function track(pid: number): void {
  if (!hooksInstalled) {
    hooksInstalled = true;
    process.once('exit', killLive);
    for (const signal of ENDING_SIGNALS) {
      process.on(signal, () => {
        killLive();
        if (process.listenerCount(signal) === 1) process.exit(128 + constants.signals[signal]);
      });
    }
  }
  live.add(pid);
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** One run of the program, classified: timeouts and non-zero exits are worth another try. */
function runOnce(label: string, argv: string[], env: NodeJS.ProcessEnv, settings: ModelSettings, request: ProviderRequest): Promise<CallAttempt<string>> {
  return new Promise((resolve) => {
    // A process group of its own, so a timeout also kills whatever the program started.
    const group = process.platform !== 'win32';
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    let child: ChildProcessWithoutNullStreams;
    const settle = (attempt: CallAttempt<string>, kill = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      if (kill && child) {
        if (group && child.pid !== undefined) killGroup(child.pid);
        else child.kill('SIGKILL');
        child.stdout.destroy();
        child.stderr.destroy();
      }
      resolve(attempt);
    };
    const onAbort = () => settle({ ok: false, transient: false, reason: `${label}: interrupted` }, true);
    try {
      // Loaded on first use: a command that runs no provider never pays for node:child_process.
      const { spawn } = process.getBuiltinModule('node:child_process');
      child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['pipe', 'pipe', 'pipe'], detached: group });
    } catch (error) {
      // Invalid arguments (e.g. a NUL byte) are rejected before any process exists.
      return settle({ ok: false, transient: false, reason: `${label}: cannot run ${argv[0]} (${(error as Error).message})` });
    }
    if (group && child.pid !== undefined) track(child.pid);
    timer = setTimeout(() => settle({ ok: false, transient: true, reason: `${label}: timed out after ${settings.timeoutMs} ms` }, true), settings.timeoutMs);
    request.signal?.addEventListener('abort', onAbort, { once: true });

    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    child.on('error', (error: NodeJS.ErrnoException) => {
      const code = error.code ?? 'spawn failed';
      const reason = code === 'ENOENT' ? `${label}: program not found: ${argv[0]}` : `${label}: cannot run ${argv[0]} (${code})`;
      settle({ ok: false, transient: !PERMANENT_SPAWN_ERRORS.has(code), reason });
    });
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.byteLength;
      if (stdoutBytes > settings.maxAnswerBytes) {
        settle({ ok: false, transient: false, oversize: true, reason: `${label}: answer over ${settings.maxAnswerBytes} bytes` }, true);
      } else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL * 4);
    });
    // Whatever the program left running in its group (a helper it started and did not wait for)
    // ends when the program does: a call bounds the program's time, and the run's, not just its
    // answer's — and a helper that kept the program's stdout open would otherwise hold the answer
    // back (no 'close') until the timeout. What the program wrote is in the pipe already.
    child.on('exit', () => {
      if (group && child.pid !== undefined) killGroup(child.pid);
    });
    child.on('close', (code, signal) => {
      if (child.pid !== undefined) live.delete(child.pid);
      if (code === 0) return settle({ ok: true, value: Buffer.concat(stdout).toString('utf8') });
      const why = signal ? `killed by ${signal}` : `exit ${code}`;
      // The program's own words, cut, with anything key-shaped masked: an outage line is printed.
      const said = maskSecrets(stderr.trim().split('\n').pop() ?? '').slice(0, STDERR_TAIL);
      settle({ ok: false, transient: true, reason: `${label}: ${why}${said ? `: ${said}` : ''}` });
    });
    // A program that exits without reading its stdin is judged by its exit, not by EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(request.prompt);
  });
}

/**
 * A provider that runs `def.command` once per attempt. `retry` tunes the backoff (tests use short
 * waits); the attempts come from `settings`. Usage is always unknown: a program reports no tokens.
 */
export function createCommandProvider(name: string, def: CommandProviderConfig, settings: ModelSettings, retry: Partial<RetryPolicy> = {}): Provider {
  const label = `command provider "${name}"`;
  const parsed = parseCommandLine(def.command);
  return {
    name,
    kind: 'command',
    paid: def.paid !== false,
    model: def.model,
    source: parsed.ok ? JSON.stringify(parsed.argv) : def.command,
    readsEnv: true,
    deterministic: false,
    async call(request) {
      if (!parsed.ok) return { ok: false, outage: `${label}: ${parsed.reason}` };
      const env = childEnv(settings, def, request);
      const policy: RetryPolicy = { attempts: settings.attempts, retryAfterCapMs: settings.retryAfterCapMs, ...retry };
      const result = await withRetries(() => runOnce(label, parsed.argv, env, settings, request), policy, request.signal);
      if (!result.ok)
        return {
          ok: false,
          outage: result.outage.startsWith(label) ? result.outage : `${label}: ${result.outage}`,
          ...(result.oversize ? { oversize: true } : {}),
        };
      // An empty answer is "no answer" (SPEC §5.5: untouched, retried next run), never an invalid one.
      if (!result.value.trim()) return { ok: false, outage: `${label}: answered nothing` };
      return { ok: true, text: result.value, usage: { ...UNKNOWN_USAGE } };
    },
  };
}
