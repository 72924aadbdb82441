/**
 * The review walk on a real pseudo-terminal (util-linux `script` gives the binary one): Ctrl-C is
 * exit 130 and Ctrl-D a clean quit, both with the summary so far and no internal error; an
 * invalid visibility is refused at once and asked again. Keys are sent as a terminal sends them
 * (raw bytes; Enter is a carriage return), each one after the prompt it answers has appeared.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, proposalInput, testEngine } from '../helpers.js';
import { cliStore } from './cli.js';

const CTRL_C = '\u0003';
const CTRL_D = '\u0004';

interface Session {
  code: number | null;
  /** What the terminal showed, with its control sequences and carriage returns taken out. */
  screen: string;
}

/** Strip what a terminal acts on (cursor moves, clears) so the text can be read and matched. */
function plain(text: string): string {
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
}

/** Run `pipeline run review` on a pseudo-terminal, answering each prompt ("> " or ": ") with the next key. */
function walk(env: Record<string, string>, keys: string[]): Promise<Session> {
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} run review`;
  const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env, TERM: 'xterm' }, stdio: 'pipe' });
  let raw = '';
  let answeredAt = 0;
  const pending = [...keys];
  child.stdout.on('data', (chunk: Buffer) => {
    raw += chunk.toString('utf8');
    const screen = plain(raw);
    // A new prompt: the screen ends with one, and has grown since the last answer.
    if (/(> |: )$/.test(screen) && screen.length > answeredAt && pending.length) {
      answeredAt = screen.length;
      child.stdin.write(pending.shift()!);
    }
  });
  // Never hang the suite on a walk that does not end (not a timing assertion: the test then fails on its exit code).
  const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, screen: plain(raw) });
    });
  });
}

async function pendingStore(count: number): Promise<{ env: Record<string, string>; ids: string[]; store: string }> {
  const { store, env } = cliStore();
  const { engine } = await testEngine({ storeDir: store });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const outcome = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (outcome.kind !== 'committed') throw new Error(outcome.kind);
    ids.push(outcome.id);
  }
  return { env, ids, store };
}

async function statusOf(store: string, id: string): Promise<unknown> {
  const { engine } = await testEngine({ storeDir: store });
  const read = await engine.read(id);
  return read.ok ? read.stored.proposal['status'] : undefined;
}

describe('the walk on a pseudo-terminal', () => {
  it('exits 130 on Ctrl-C with the summary so far, and no internal error', async () => {
    const { env } = await pendingStore(2);
    const session = await walk(env, ['d\r', CTRL_C]);
    expect(session.code).toBe(130);
    expect(session.screen).toMatch(/review: 0 decided, 1 left for later, 1 not reached \(interrupted\)\n/);
    expect(session.screen).not.toMatch(/internal error|Aborted/);
  });

  it('quits cleanly on Ctrl-D, exit 0, with the summary so far', async () => {
    const { env } = await pendingStore(2);
    const session = await walk(env, [CTRL_D]);
    expect(session.code).toBe(0);
    expect(session.screen).toMatch(/review: 0 decided, 0 left for later, 2 not reached\n/);
    expect(session.screen).not.toMatch(/internal error|Aborted/);
  });

  it('refuses an invalid visibility at once, asks again, and confirms with the right one', async () => {
    const { env, ids, store } = await pendingStore(1);
    const session = await walk(env, ['c\r', 'everyone\r', 'org\r', '\r']);
    expect(session.code).toBe(0);
    const after = session.screen.slice(session.screen.indexOf('everyone'));
    // the refusal comes before any other question, then the same question again
    const refused = '  visibility must be one of private, org or public, got "everyone"; try again\n';
    expect(after.startsWith(`everyone\n${refused}  visibility (private|org|public): org\n  version-independent`)).toBe(true);
    expect(session.screen).toContain(`${ids[0]} pending → confirmed`);
    expect(await statusOf(store, ids[0]!)).toBe('confirmed');
  });

  it('stops on Ctrl-C in the middle of a question, writing nothing for that proposal', async () => {
    const { env, ids, store } = await pendingStore(1);
    const session = await walk(env, ['c\r', CTRL_C]);
    expect(session.code).toBe(130);
    expect(session.screen).toMatch(/review: 0 decided, 0 left for later, 1 not reached \(interrupted\)/);
    expect(await statusOf(store, ids[0]!)).toBe('pending');
  });
});
