/** Output conventions in-process: colours only on a terminal and never with NO_COLOR; the progress bar only on a terminal; --limit. */
import { rmSync, utimesSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Output, type Io } from '../../engine/cli/io.js';
import { main } from '../../engine/cli/main.js';
import { proposalInput, ROOT, tempDir } from '../helpers.js';

function io(options: { tty: boolean; env?: Record<string, string>; input?: string }): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  const stdin = new PassThrough();
  stdin.end(options.input ?? '');
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    stdin,
    cwd: ROOT,
    env: { ...process.env, PIPELINE_CONFIG_CACHE: 'off', ...options.env },
    interactive: false,
    stderrIsTTY: options.tty,
    onInterrupt: () => () => {},
    out: () => out,
    err: () => err,
  };
}

describe('colours', () => {
  it('colour refusals on a terminal, and never with NO_COLOR or off a terminal', () => {
    const { NO_COLOR: _unset, ...env } = process.env;
    void _unset;
    const onTerminal = io({ tty: true, env: {} });
    new Output({ ...onTerminal, env }, { json: false }).refused('no');
    expect(onTerminal.err()).toContain('\u001b[');
    const noColor = io({ tty: true, env: { NO_COLOR: '1' } });
    new Output(noColor, { json: false }).refused('no');
    expect(noColor.err()).toBe('refused: no\n');
    const piped = io({ tty: false });
    new Output({ ...piped, env }, { json: false }).refused('no');
    expect(piped.err()).toBe('refused: no\n');
  });
});

describe('JSON arrays', () => {
  it('prints a long array exactly as one JSON.stringify would, escaped, leaving out and naming what nests too deep', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 300; i++) deep = [deep];
    // Across several batches and output chunks: small and large elements, text a terminal must not
    // receive raw, every kind of JSON value.
    const values: unknown[] = Array.from({ length: 101 }, (_, i) =>
      i % 10 === 3
        ? { id: i, text: 'x'.repeat(20_000), nested: { list: [1, 'two', null, true, { three: [] }] } }
        : { id: i, text: `line\nbreak \u001b[31m red \u2028`, empty: {} },
    );
    values.splice(40, 0, deep);
    values.splice(70, 0, 7, 'plain', null);
    const piped = io({ tty: false });
    const left = new Output(piped, { json: true }).dataArray(values);
    expect(left).toEqual([40]);
    const printed = values.filter((_, index) => index !== 40);
    expect(piped.out()).toBe(`${JSON.stringify(printed, null, 2).replace(/[\u001b\u2028]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`);
    expect(JSON.parse(piped.out())).toEqual(printed);

    const none = io({ tty: false });
    expect(new Output(none, { json: true }).dataArray([deep])).toEqual([0]);
    expect(none.out()).toBe('[]\n');
  });
});

describe('a JSON array printed as it comes', () => {
  it('writes whole chunks before its last element and is no complete array until end()', () => {
    const writes: string[] = [];
    const array = new Output({ ...io({ tty: false }), stdout: { write: (text: string) => writes.push(text) } }, { json: true }).arrayWriter();
    const values = Array.from({ length: 200 }, (_, i) => ({ id: i, text: `${'x'.repeat(4_000)}\u2028` }));
    for (const value of values) expect(array.push(value)).toBe(true);
    // 200 elements of 4 KB: several 64 KB chunks have left, and what left does not parse.
    expect(writes.length).toBeGreaterThan(1);
    expect(writes.join('').startsWith('[\n  {')).toBe(true);
    expect(() => JSON.parse(writes.join(''))).toThrow();
    array.end();
    expect(writes.join('')).toBe(`${JSON.stringify(values, null, 2).replaceAll('\u2028', '\\u2028')}\n`);
  });

  /** 40 pending proposals of about 2.5 KB each as JSON: more than one 64 KB chunk. */
  async function bigStore(): Promise<{ env: Record<string, string>; ids: string[] }> {
    const env = { PIPELINE_STORE: path.join(tempDir(), 'store'), NO_COLOR: '1' };
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const propose = io({ tty: false, env, input: JSON.stringify(proposalInput({ claim: `${'c'.repeat(2_000)} ${i}` })) });
      expect(await main(['propose', '-'], propose)).toBe(0);
      ids.push(propose.out().trim());
    }
    return { env, ids: ids.sort() };
  }

  /** An Io whose stdout is `write`. */
  const writingTo = (env: Record<string, string>, write: (text: string) => void): Io => ({ ...io({ tty: false, env }), stdout: { write } });

  it('list --json prints as it reads: its first chunk leaves before the last proposal is read', async () => {
    const { env, ids } = await bigStore();
    // Files at rest, and indexed: the listing reads each one when it comes to it (fresh files are
    // read by the index scan, all of them, before anything is listed).
    // (A file's last change is the later of its mtime and its ctime, which utimes moves to now: the
    // clock runs 5 s ahead.)
    const dir = path.join(env.PIPELINE_STORE!, 'proposals');
    const past = new Date(Date.now() - 60_000);
    for (const id of ids) utimesSync(path.join(dir, `${id}.json`), past, past);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 5000);
      expect(await main(['status'], io({ tty: false, env }))).toBe(0);
      let written = '';
      const listing = writingTo(env, (text) => {
        // The last proposal goes away once the first chunk has left: a listing that read every file
        // before printing has it already.
        if (!written) rmSync(path.join(dir, `${ids.at(-1)}.json`));
        written += text;
      });
      expect(await main(['list', '--json'], listing)).toBe(0);
      expect(JSON.parse(written).map((proposal: { id: string }) => proposal.id)).toEqual(ids.slice(0, -1));
    } finally {
      vi.useRealTimers();
    }
  });

  it('list --json whose stdout fails half-way fails and leaves no array that parses', async () => {
    const { env } = await bigStore();
    let written = '';
    const failing = writingTo(env, (text) => {
      if (written) throw new Error('disk full');
      written += text;
    });
    await expect(main(['list', '--json'], failing)).rejects.toThrow('disk full');
    expect(written.startsWith('[\n  {')).toBe(true);
    expect(() => JSON.parse(written)).toThrow();
  });
});

describe('runs', () => {
  async function seeded(count: number): Promise<Record<string, string>> {
    const env = { PIPELINE_STORE: path.join(tempDir(), 'store'), NO_COLOR: '1' };
    for (let i = 0; i < count; i++) {
      const propose = io({ tty: false, env, input: JSON.stringify(proposalInput()) });
      await main(['propose', '-'], propose);
      await main(['confirm', propose.out().trim(), '--visibility', 'private'], io({ tty: false, env }));
    }
    return env;
  }

  it('draws a progress bar on a terminal only', async () => {
    const env = await seeded(3);
    const terminal = io({ tty: true, env });
    expect(await main(['run', 'judge', '--limit', '1'], terminal)).toBe(0);
    expect(terminal.err()).toMatch(/\rjudge \[#+-*\] 1\/1/);
    const piped = io({ tty: false, env });
    expect(await main(['run', 'judge'], piped)).toBe(0);
    expect(piped.err()).not.toContain('\r');
  });

  it('processes at most --limit N proposals', async () => {
    const env = await seeded(3);
    const run = io({ tty: false, env });
    expect(await main(['run', 'judge', '--limit', '2', '--json'], run)).toBe(0);
    expect(JSON.parse(run.out()).counts.approved).toBe(2);
    const status = io({ tty: false, env });
    await main(['status', '--json'], status);
    expect(JSON.parse(status.out())).toMatchObject({ confirmed: 1, approved: 2 });
    const bad = io({ tty: false, env });
    expect(await main(['run', 'judge', '--limit', '0'], bad)).toBe(1);
    expect(bad.err()).toMatch(/--limit must be a whole number of 1 or more/);
  });
});
