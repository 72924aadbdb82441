/**
 * `pipeline run review` on a terminal: the walk shows each pending proposal and applies the
 * person's choice through the same code as the single commands. Driven in-process with a fake
 * terminal that answers each prompt as it appears; Ctrl-C and Ctrl-D on a real pseudo-terminal
 * are in walk-pty.test.ts.
 */
import { PassThrough } from 'node:stream';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../engine/cli/main.js';
import type { Io } from '../../engine/cli/io.js';
import { renderFieldLine } from '../../engine/cli/walk.js';
import { FileStore } from '../../engine/store/file-store.js';
import { wrapWords } from '../../engine/util/wrap.js';
import { candidate, proposalInput, ROOT, tempDir } from '../helpers.js';

/** What a scripted answer can be: a line, the end of input (Ctrl-D), Ctrl-C, or a line given after something else happened. */
type Scripted = string | { end: true } | { interrupt: true } | { after: () => Promise<unknown>; line: string };

function terminal(answers: Scripted[], env: Record<string, string>, columns = 80): { io: Io; out: () => string; err: () => string } {
  const stdin = new PassThrough();
  let out = '';
  let err = '';
  let onInterrupt: (() => void) | undefined;
  const io: Io = {
    stdout: { write: (text: string) => (out += text) },
    stderr: Object.assign(
      {
        write: (text: string) => {
          err += text;
          // answer a prompt (a question ends with "> " or ": ") with the next scripted line
          if (/(> |: )$/.test(text) && answers.length) {
            const next = answers.shift()!;
            setImmediate(() => {
              if (typeof next === 'string') stdin.write(`${next}\n`);
              else if ('end' in next) stdin.end();
              else if ('after' in next) void next.after().then(() => stdin.write(`${next.line}\n`));
              else onInterrupt?.();
            });
          }
          return true;
        },
      },
      { columns },
    ),
    stdin: Object.assign(stdin, { isTTY: true }),
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', ...env },
    interactive: true,
    stderrIsTTY: false,
    onInterrupt: (handler) => {
      onInterrupt = handler;
      return () => (onInterrupt = undefined);
    },
  };
  return { io, out: () => out, err: () => err };
}

async function pendingStore(count: number, overrides: Record<string, unknown> = {}): Promise<{ env: Record<string, string>; store: string; ids: string[] }> {
  const store = path.join(tempDir(), 'store');
  const env = { PIPELINE_STORE: store, PIPELINE_CONFIG_CACHE: 'off' };
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const t = terminal([], env);
    const stdin = PassThrough.from(JSON.stringify(proposalInput(overrides))) as unknown as PassThrough;
    await main(['propose', '-'], { ...t.io, stdin: Object.assign(stdin, { isTTY: false }) });
    ids.push(t.out().trim());
  }
  return { env, store, ids };
}

async function statusOf(store: string, id: string): Promise<Record<string, unknown>> {
  const read = await new FileStore({ dir: store, ledgers: {} }).read(id);
  return read.kind === 'found' ? read.stored.proposal : {};
}

describe('run review, interactively', () => {
  it('walks the pending proposals: confirm with a visibility, pass with a reason, defer, quit', async () => {
    const { env, store, ids } = await pendingStore(4);
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
    // each proposal counted once: the deferred one is not also "still pending"
    expect(t.out()).toMatch(/review: 2 decided, 1 left for later, 1 not reached\n$/);
    expect(await statusOf(store, ids[0]!)).toMatchObject({ status: 'confirmed', visibility: 'org' });
    expect(await statusOf(store, ids[1]!)).toMatchObject({ status: 'passed' });
    expect((await statusOf(store, ids[2]!))['status']).toBe('pending');
    expect((await statusOf(store, ids[3]!))['status']).toBe('pending');
  });

  it('refuses a visibility not in the list at once, with the allowed ones, and asks again', async () => {
    const { env, store, ids } = await pendingStore(1);
    const t = terminal(['c', 'everyone', 'org', '', 'q'], env);
    expect(await main(['run', 'review'], t.io)).toBe(0);
    const err = t.err();
    const refusal = err.indexOf('visibility must be one of private, org or public, got "everyone"; try again');
    expect(refusal).toBeGreaterThan(0);
    // refused before the next question, and the same question is asked again
    expect(err.indexOf('version-independent')).toBeGreaterThan(refusal);
    expect(err.slice(refusal).match(/visibility \(private\|org\|public\): /g)).toHaveLength(1);
    expect(err).not.toMatch(/--visibility/);
    expect(await statusOf(store, ids[0]!)).toMatchObject({ status: 'confirmed', visibility: 'org' });
  });

  it('refuses an unknown key with the allowed answers, saying Enter is needed', async () => {
    const { env } = await pendingStore(1);
    const t = terminal(['x', '', 'q'], env);
    expect(await main(['run', 'review'], t.io)).toBe(0);
    expect(t.err()).toContain('[c] confirm  [p] pass  [d] defer  [q] quit  (key, then Enter) > ');
    expect(t.err()).toContain('  "x" is not a choice: answer c, p, d or q, then Enter\n');
    expect(t.err()).toContain('  no answer: answer c, p, d or q, then Enter\n');
  });

  it('shows the scope as a sentence, and wraps long text at word boundaries', async () => {
    const claim = 'Vitest four moves the default hook timeout to ten seconds and reports a slow hook by its name instead of the file';
    const scope = { kind: 'versioned', versions: { vite: '<6', vitest: '>=4' } };
    const { env } = await pendingStore(1, { claim, applies_to: { ...(candidate()['applies_to'] as object), stack: ['vite', 'vitest'], scope } });
    const t = terminal(['q'], env, 60);
    expect(await main(['run', 'review'], t.io)).toBe(0);
    expect(t.err()).toContain('  scope           vite <6, vitest >=4\n');
    expect(t.err()).toContain('  stack           vite, vitest\n');
    const claimLines = t.err().slice(t.err().indexOf('  claim')).split('\n').slice(0, 4);
    expect(claimLines).toEqual([
      '  claim           Vitest four moves the default hook timeout',
      '                  to ten seconds and reports a slow hook by',
      '                  its name instead of the file',
      expect.stringMatching(/^ {2}rationale/),
    ]);
  });

  it('quits cleanly at the end of input (Ctrl-D): the summary so far, exit 0, no error', async () => {
    const { env, ids } = await pendingStore(2);
    const t = terminal(['p', '', { end: true }], env);
    expect(await main(['run', 'review'], t.io)).toBe(0);
    expect(t.out()).toBe(`${ids[0]} pending → passed\nreview: 1 decided, 0 left for later, 1 not reached\n`);
    expect(t.err()).not.toMatch(/error|Aborted/);
  });

  it('stops at Ctrl-C with exit 130 and the summary so far; what was decided stays decided', async () => {
    const { env, store, ids } = await pendingStore(2);
    const t = terminal(['c', 'org', '', { interrupt: true }], env);
    expect(await main(['run', 'review'], t.io)).toBe(130);
    expect(t.out()).toBe(`${ids[0]} pending → confirmed\nreview: 1 decided, 0 left for later, 1 not reached (interrupted)\n`);
    expect(t.err()).toMatch(/interrupted: what was decided stays decided\n$/);
    expect(t.err()).not.toMatch(/internal error|Aborted/);
    expect((await statusOf(store, ids[1]!))['status']).toBe('pending');
  });
});

describe('a proposal decided elsewhere during the walk', () => {
  it('is refused once, then left: asking again could never succeed', async () => {
    const { env, ids } = await pendingStore(1);
    const elsewhere = () => main(['confirm', ids[0]!, '--visibility', 'org'], terminal([], env).io);
    const t = terminal([{ after: elsewhere, line: 'c' }, 'public', ''], env);
    expect(await main(['run', 'review'], t.io)).toBe(0);
    expect(t.err()).toMatch(/refused: .* is already confirmed with a different visibility/);
    expect(t.out()).toBe('review: 0 decided, 0 left for later, 0 not reached, 1 changed elsewhere meanwhile\n');
  });
});

describe('field layout', () => {
  it('wraps at spaces only, keeps a long word whole and keeps the spacing inside a line', () => {
    expect(wrapWords('aaa bbb ccc', 7)).toEqual(['aaa bbb', 'ccc']);
    expect(wrapWords('https://example.com/a/very/long/path x', 10)).toEqual(['https://example.com/a/very/long/path', 'x']);
    expect(wrapWords('  indented  twice\nnext', 40)).toEqual(['  indented  twice', 'next']);
    expect(renderFieldLine('label', 'one two three', 24)).toBe('  label           one two three');
  });
});
