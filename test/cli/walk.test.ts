/**
 * `pipeline run review` on a terminal: the walk shows each pending proposal and applies the
 * person's choice through the same code as the single commands. Driven in-process with a fake
 * terminal that answers each prompt as it appears.
 */
import { PassThrough } from 'node:stream';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../engine/cli/main.js';
import type { Io } from '../../engine/cli/io.js';
import { FileStore } from '../../engine/store/file-store.js';
import { proposalInput, ROOT, tempDir } from '../helpers.js';

function terminal(answers: string[], env: Record<string, string>): { io: Io; out: () => string; err: () => string } {
  const stdin = new PassThrough();
  let out = '';
  let err = '';
  const io: Io = {
    stdout: { write: (text: string) => (out += text) },
    stderr: {
      write: (text: string) => {
        err += text;
        // answer a prompt (a question ends with "> " or ": ") with the next scripted line
        if (/(> |: )$/.test(text) && answers.length) setImmediate(() => stdin.write(`${answers.shift()}\n`));
        return true;
      },
    },
    stdin: Object.assign(stdin, { isTTY: true }),
    cwd: ROOT,
    env: { ...process.env, ...env },
    interactive: true,
    stderrIsTTY: false,
    onInterrupt: () => () => {},
  };
  return { io, out: () => out, err: () => err };
}

describe('run review, interactively', () => {
  it('walks the pending proposals: confirm with a visibility, pass with a reason, defer, quit', async () => {
    const store = path.join(tempDir(), 'store');
    const env = { PIPELINE_STORE: store, PIPELINE_CONFIG_CACHE: 'off' };
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const t = terminal([], env);
      await main(['propose', '-'], { ...t.io, stdin: Object.assign(PassThrough.from(JSON.stringify(proposalInput())) as unknown as PassThrough, { isTTY: false }) });
      ids.push(t.out().trim());
    }
    // 1: a refused choice (private + justification) is asked again, then confirmed at org
    // 2: passed with a reason   3: deferred   4: quit before it
    const t = terminal(['c', 'private', 'because always', 'c', 'org', '', 'p', 'too local', 'd', 'q'], env);
    const code = await main(['run', 'review'], t.io);
    expect(code).toBe(0);
    expect(t.err()).toMatch(new RegExp(`1/4 {2}${ids[0]}`));
    expect(t.err()).toMatch(/claim {11}pnpm 8 refuses lockfiles/);
    expect(t.err()).toMatch(/private proposal runs no jury/);
    expect(t.out()).toMatch(new RegExp(`${ids[0]} pending → confirmed`));
    expect(t.out()).toMatch(new RegExp(`${ids[1]} pending → passed`));
    expect(t.out()).toMatch(/review: 2 decided, 1 left for later, 2 still pending/);
    const files = new FileStore({ dir: store, ledgers: {} });
    const status = async (id: string) => {
      const read = await files.read(id);
      return read.kind === 'found' ? read.stored.proposal : {};
    };
    expect(await status(ids[0]!)).toMatchObject({ status: 'confirmed', visibility: 'org' });
    expect(await status(ids[1]!)).toMatchObject({ status: 'passed' });
    expect((await status(ids[2]!))['status']).toBe('pending');
    expect((await status(ids[3]!))['status']).toBe('pending');
  });
});
