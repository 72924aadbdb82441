import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createCommandProvider, parseCommandLine } from '../../engine/providers/command.js';
import type { RetryPolicy } from '../../engine/providers/retry.js';
import { FAST_RETRY, promptRequest, testSettings } from '../fixtures/providers/local-server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers');
/** A command line running a fixture script with this node, each part quoted (paths may hold spaces). */
const run = (script: string, ...args: string[]) => [process.execPath, path.join(FIXTURES, script), ...args].map((part) => `'${part}'`).join(' ');

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pipeline-command-'));
  dirs.push(dir);
  return dir;
}

/** A retry policy that records the waits instead of sleeping: a wait means a retry happened. */
function recordingRetry(): { retry: Partial<RetryPolicy>; waits: number[] } {
  const waits: number[] = [];
  return { retry: { ...FAST_RETRY, sleep: async (ms: number) => void waits.push(ms) }, waits };
}

/** Alive and not a zombie (a container's init may never reap killed orphans). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = `/proc/${pid}/stat`;
  return !(existsSync(stat) && / Z /.test(readFileSync(stat, 'utf8')));
}

async function eventuallyDead(pid: number): Promise<boolean> {
  // Never pid 0 (or NaN) from a pid file read too early: kill(0, 0) asks about our own group.
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error(`not a pid: ${pid}`);
  // Up to 10 s (a loaded machine reaps slowly); as soon as the process is gone otherwise.
  for (let i = 0; i < 500 && isAlive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return !isAlive(pid);
}

describe('parseCommandLine', () => {
  it('splits plain words on any run of whitespace', () => {
    expect(parseCommandLine('  claude   -p\t--verbose ')).toEqual({ ok: true, argv: ['claude', '-p', '--verbose'] });
  });

  it('keeps double-quoted text together and unescapes \\" and \\\\ inside it', () => {
    expect(parseCommandLine('prog "two words" "say \\"hi\\" \\\\ \\n"')).toEqual({ ok: true, argv: ['prog', 'two words', 'say "hi" \\ \\n'] });
  });

  it('takes single-quoted text literally, backslashes included', () => {
    expect(parseCommandLine("prog 'a \\\" b'")).toEqual({ ok: true, argv: ['prog', 'a \\" b'] });
  });

  it('joins adjacent quoted and plain parts into one argument and keeps empty quotes', () => {
    expect(parseCommandLine(`prog --name="a b"'c d' "" x\\ y`)).toEqual({ ok: true, argv: ['prog', '--name=a bc d', '', 'x y'] });
  });

  it('refuses an unterminated quote or an empty command, naming the problem', () => {
    expect(parseCommandLine('prog "open')).toEqual({ ok: false, reason: 'unterminated " quote in "prog "open"' });
    expect(parseCommandLine('   ')).toEqual({ ok: false, reason: 'the command is empty' });
  });
});

describe('command provider', () => {
  it('sends the prompt on stdin and answers with stdout, usage unknown', async () => {
    const provider = createCommandProvider('echo', { kind: 'command', command: run('echo.mjs'), model: 'echo-1' }, testSettings());
    const result = await provider.call(promptRequest('{"score": 0.9, "é": "ü"}'));
    expect(result).toEqual({ ok: true, text: '{"score": 0.9, "é": "ü"}', usage: { tokens_in: null, tokens_out: null } });
    expect(provider).toMatchObject({ name: 'echo', kind: 'command', paid: true, model: 'echo-1', deterministic: false });
  });

  it('is free only when it says paid: false', () => {
    expect(createCommandProvider('x', { kind: 'command', command: 'x', paid: false }, testSettings()).paid).toBe(false);
  });

  it('gives the program only PATH, HOME, LANG, TERM, TMPDIR, the PIPELINE_* variables and the names listed under env', async () => {
    const def = { kind: 'command' as const, command: run('env.mjs', 'two words'), env: ['FIXTURE_LISTED', 'FIXTURE_UNSET'] };
    const pipelineEnv = {
      PATH: '/usr/bin:/bin',
      HOME: '/home/someone',
      LANG: 'C.UTF-8',
      TERM: 'xterm',
      TMPDIR: '/tmp',
      LC_ALL: 'C',
      FIXTURE_LISTED: 'listed',
      ANTHROPIC_API_KEY: 'sk-ant-secret',
      GITHUB_TOKEN: 'ghp_secret',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      PIPELINE_STAGE: 'from-the-shell',
    };
    const call = { PIPELINE_STAGE: 'judge', PIPELINE_JUDGE_TYPE: 'adversarial', PIPELINE_PROPOSAL_ID: 'p-1', PIPELINE_EXTRA: 'not one of the three' };
    const result = await createCommandProvider('env', def, testSettings({ env: pipelineEnv })).call(promptRequest('ignored', { env: call }));
    expect(result.ok).toBe(true);
    const seen = JSON.parse((result as { text: string }).text) as { env: Record<string, string>; argv: string[] };
    expect(seen.argv).toEqual(['two words']);
    expect(seen.env).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/someone',
      LANG: 'C.UTF-8',
      TERM: 'xterm',
      TMPDIR: '/tmp',
      FIXTURE_LISTED: 'listed',
      PIPELINE_STAGE: 'judge',
      PIPELINE_JUDGE_TYPE: 'adversarial',
      PIPELINE_PROPOSAL_ID: 'p-1',
    });
  });

  it('leaks nothing of the parent process environment the pipeline does not list', async () => {
    process.env['FIXTURE_PARENT_SECRET'] = 'sk-ant-parent-secret';
    try {
      const def = { kind: 'command' as const, command: run('env.mjs'), env: ['FIXTURE_PARENT_LISTED'] };
      const settings = testSettings({ env: { ...process.env, FIXTURE_PARENT_LISTED: 'yes' } });
      const result = await createCommandProvider('env', def, settings).call(promptRequest('ignored'));
      const seen = JSON.parse((result as { text: string }).text) as { env: Record<string, string> };
      expect(seen.env['FIXTURE_PARENT_SECRET']).toBeUndefined();
      expect(seen.env['FIXTURE_PARENT_LISTED']).toBe('yes');
      expect(Object.keys(seen.env).every((name) => ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR', 'FIXTURE_PARENT_LISTED'].includes(name))).toBe(true);
    } finally {
      delete process.env['FIXTURE_PARENT_SECRET'];
    }
  });

  it('reports a missing program as an outage and does not retry it', async () => {
    const { retry, waits } = recordingRetry();
    const provider = createCommandProvider('gone', { kind: 'command', command: 'pipeline-no-such-program-xyz -p' }, testSettings(), retry);
    expect(await provider.call(promptRequest('hi'))).toEqual({ ok: false, outage: 'command provider "gone": program not found: pipeline-no-such-program-xyz' });
    expect(waits).toEqual([]);
  });

  it('retries a non-zero exit and gives up after the attempts, quoting stderr', async () => {
    const counter = path.join(tempDir(), 'runs');
    const provider = createCommandProvider('flaky', { kind: 'command', command: run('flaky.mjs', counter, '99') }, testSettings({ attempts: 3 }), FAST_RETRY);
    const result = await provider.call(promptRequest('hi'));
    expect(result).toEqual({ ok: false, outage: 'command provider "flaky": exit 1: run 3: not yet (gave up after 3 attempts)' });
    expect(readFileSync(counter, 'utf8')).toBe('3');
  });

  it('answers once a retried program succeeds', async () => {
    const counter = path.join(tempDir(), 'runs');
    const provider = createCommandProvider('flaky', { kind: 'command', command: run('flaky.mjs', counter, '2') }, testSettings({ attempts: 3 }), FAST_RETRY);
    expect(await provider.call(promptRequest('hello'))).toMatchObject({ ok: true, text: 'run 2: hello' });
  });

  it('reports an exit code as an outage, never as an answer', async () => {
    const provider = createCommandProvider('exit', { kind: 'command', command: run('exit.mjs', '3') }, testSettings({ attempts: 1 }));
    expect(await provider.call(promptRequest('hi'))).toEqual({
      ok: false,
      outage: 'command provider "exit": exit 3: fixture failed on purpose (gave up after 1 attempt)',
    });
  });

  it('masks a key the program prints on stderr before its outage line quotes it', async () => {
    const script = 'process.stderr.write("401: invalid x-api-key sk-ant-api03-Zx8Qw2Lr5Ty7Ui9Op1As3Df5Gh7Jk9\\n"); process.exit(2)';
    const provider = createCommandProvider('leaky', { kind: 'command', command: `'${process.execPath}' -e '${script}'` }, testSettings({ attempts: 1 }));
    expect(await provider.call(promptRequest('hi'))).toEqual({
      ok: false,
      outage: 'command provider "leaky": exit 2: 401: invalid x-api-key *** (gave up after 1 attempt)',
    });
  });

  it('treats a clean exit with nothing on stdout as no answer', async () => {
    const provider = createCommandProvider('mute', { kind: 'command', command: run('exit.mjs', '0') }, testSettings());
    expect(await provider.call(promptRequest('hi'))).toEqual({ ok: false, outage: 'command provider "mute": answered nothing' });
  });

  it('kills the whole process group on a timeout and retries the timeout', async () => {
    const pidFile = path.join(tempDir(), 'grandchild.pid');
    const { retry, waits } = recordingRetry();
    const provider = createCommandProvider(
      'slow',
      { kind: 'command', command: run('sleep.mjs', pidFile) },
      testSettings({ timeoutMs: 800, attempts: 2 }),
      retry,
    );
    const result = await provider.call(promptRequest('hi'));
    expect(result).toEqual({ ok: false, outage: 'command provider "slow": timed out after 800 ms (gave up after 2 attempts)' });
    expect(waits).toHaveLength(1);
    expect(await eventuallyDead(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it.each([
    ['its output elsewhere', 'quiet'],
    ['holding the program’s stdout open', 'holds-stdout'],
  ])('ends what the program left running when it answers (a helper %s): the answer is taken, no process is left behind', async (_name, mode) => {
    const pidFile = path.join(tempDir(), 'grandchild.pid');
    // (A timeout past the test's: an answer held back until it fails the test.)
    const provider = createCommandProvider(
      'leaves',
      { kind: 'command', command: run('leave-behind.mjs', pidFile, mode) },
      testSettings({ timeoutMs: 600_000 }),
    );
    expect(await provider.call(promptRequest('hi'))).toMatchObject({ ok: true, text: '{"answer": 1}\n' });
    expect(await eventuallyDead(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('refuses stdout over maxAnswerBytes without retrying, and accepts exactly the limit', async () => {
    const { retry, waits } = recordingRetry();
    const settings = testSettings({ maxAnswerBytes: 1024 * 1024 });
    const big = createCommandProvider('big', { kind: 'command', command: run('big.mjs', String(2 * 1024 * 1024)) }, settings, retry);
    expect(await big.call(promptRequest('hi'))).toEqual({ ok: false, outage: 'command provider "big": answer over 1048576 bytes', oversize: true });
    expect(waits).toEqual([]);
    const exact = createCommandProvider('exact', { kind: 'command', command: run('big.mjs', '1000') }, testSettings({ maxAnswerBytes: 1000 }));
    expect(await exact.call(promptRequest('hi'))).toMatchObject({ ok: true, text: 'x'.repeat(1000) });
  });

  it('kills the program and reports "interrupted" when the call is aborted', async () => {
    const pidFile = path.join(tempDir(), 'grandchild.pid');
    const provider = createCommandProvider('slow', { kind: 'command', command: run('sleep.mjs', pidFile) }, testSettings({ timeoutMs: 20_000 }));
    const controller = new AbortController();
    const pending = provider.call(promptRequest('hi', { signal: controller.signal }));
    // The program is running once its grandchild's pid is there (a loaded machine may take seconds).
    for (let i = 0; i < 500 && !existsSync(pidFile); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    expect(await pending).toEqual({ ok: false, outage: 'command provider "slow": interrupted' });
    expect(await eventuallyDead(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('does not start the program when the call is already aborted', async () => {
    const counter = path.join(tempDir(), 'runs');
    const provider = createCommandProvider('flaky', { kind: 'command', command: run('flaky.mjs', counter, '1') }, testSettings());
    const result = await provider.call(promptRequest('hi', { signal: AbortSignal.abort() }));
    expect(result).toEqual({ ok: false, outage: 'command provider "flaky": interrupted' });
    expect(existsSync(counter)).toBe(false);
  });

  it('reports a command line it cannot split as an outage instead of throwing', async () => {
    const provider = createCommandProvider('bad', { kind: 'command', command: 'prog "open' }, testSettings());
    expect(await provider.call(promptRequest('hi'))).toEqual({ ok: false, outage: 'command provider "bad": unterminated " quote in "prog "open"' });
  });
});
