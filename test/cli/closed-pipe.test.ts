/**
 * SPEC §7: a closed stdout (`pipeline list | head -1`) ends the command quietly, exit 0, never a
 * stack trace; a closed stderr silences messages and changes nothing else. The real binary, with
 * more output than a pipe holds, so the writer meets the closed pipe for certain. Any other write
 * error on stdout is one line and exit 1.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, tempDir } from '../helpers.js';
import { cliSpawn, cliStore } from './cli.js';
import { pendingProposal, writeProposal } from './memory-io.js';

const ULID = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const COUNT = 400;

/** A store of COUNT pending proposals (about 360 KB as list rows, more as JSON; a pipe holds 64 KB). */
function bigStore(): Record<string, string> {
  const { env } = cliStore();
  const store = path.join(tempDir(), 'store');
  for (let i = 0; i < COUNT; i++) {
    const id = `01JC8A00000000000000${[5, 4, 3, 2, 1, 0].map((shift) => ULID[(i >> (shift * 5)) & 31]).join('')}`;
    writeProposal(store, id, pendingProposal(id, `claim ${i}: ${'a long claim to fill the pipe '.repeat(30)}`));
  }
  return { ...env, PIPELINE_STORE: store };
}

/** Run the binary, read stdout up to its first line feed, close the pipe, and wait for the exit. */
async function readOneLineAndClose(args: string[], env: Record<string, string>): Promise<{ code: number | null; first: string; stderr: string }> {
  const child = cliSpawn(args, { env });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const first = await new Promise<string>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('\n')) {
        child.stdout.destroy();
        resolve(stdout.slice(0, stdout.indexOf('\n')));
      }
    });
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, first, stderr };
}

describe('a closed stdout', () => {
  it('list | head -1: exit 0, nothing on stderr', async () => {
    const result = await readOneLineAndClose(['list'], bigStore());
    expect(result.first).toMatch(/^01JC8A0{20} {2}claim 0: /);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('list --json | head -1: exit 0, nothing on stderr', async () => {
    const result = await readOneLineAndClose(['list', '--json'], bigStore());
    expect(result.first).toBe('[');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('list --json | head -1 stops reading the store: a broken file at its end is never reached', async () => {
    const env = bigStore();
    // Listed last: a listing that read on to the end would report it on stderr.
    writeFileSync(path.join(env.PIPELINE_STORE!, 'proposals', '01JC8Z00000000000000000000.json'), '{"broken');
    const result = await readOneLineAndClose(['list', '--state', 'all', '--json'], env);
    expect(result.first).toBe('[');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('a stdout that cannot be written', () => {
  it('(a full device) is one line on stderr and exit 1, never a stack trace', async () => {
    const { env } = cliStore();
    const store = path.join(tempDir(), 'store');
    writeProposal(store, '01JC8A0000000000000000P001', pendingProposal('01JC8A0000000000000000P001', 'a fine claim'));
    const full = openSync('/dev/full', 'w');
    try {
      const options = { cwd: ROOT, env: { ...process.env, ...env, PIPELINE_STORE: store }, stdio: ['ignore', full, 'pipe'] as ['ignore', number, 'pipe'] };
      const child = spawn(process.execPath, [BIN, 'list'], options);
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(stderr).toBe('pipeline: cannot write to stdout: ENOSPC\n');
      expect(code).toBe(1);
    } finally {
      closeSync(full);
    }
  });
});

describe('a closed stderr', () => {
  it('silences the messages; the listing and the exit code are as they would be', async () => {
    const { env } = cliStore();
    const store = path.join(tempDir(), 'store');
    const id = '01JC8A0000000000000000P001';
    writeProposal(store, id, pendingProposal(id, 'a fine claim'));
    // Malformed files: each is a warning on stderr, whose reader is gone.
    for (let i = 0; i < 200; i++) writeProposal(store, `01JC8A0000000000000000${String(i).padStart(4, '0')}`, '{"truncat');
    const child = cliSpawn(['list'], { env: { ...env, PIPELINE_STORE: store } });
    child.stderr.destroy();
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(stdout).toBe(`${id}  a fine claim\n`);
    expect(code).toBe(0);
  });
});

describe('a command that stops before it finished', () => {
  it('(waiting for a drain that never comes: a bug) is an internal error and exit 1, never a silent exit 0', async () => {
    const { env } = cliStore();
    const store = path.join(tempDir(), 'store');
    const id = '01JC8A0000000000000000P001';
    writeProposal(store, id, pendingProposal(id, 'a fine claim'));
    // The process's stdout says it must drain, and never does: the listing waits for what cannot come.
    const preload = path.join(tempDir(), 'never-drains.mjs');
    writeFileSync(preload, "Object.defineProperty(process.stdout, 'writableNeedDrain', { get: () => true });\n");
    const child = spawn(process.execPath, ['--import', preload, BIN, 'list', '--json'], { cwd: ROOT, env: { ...process.env, ...env, PIPELINE_STORE: store } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(stderr).toBe(
      'pipeline: internal error: the command stopped before it finished (it waited for something that can never happen); nothing more was done\n',
    );
    expect(code).toBe(1);
  });
});
