/**
 * `pipeline viz` as a command (in-process, with a captured Io): formats, usage errors, --out,
 * counts from the store given with --store, and --serve until Ctrl-C.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { proposalInput, ROOT, tempDir, testEngine } from '../helpers.js';
import { articleInput, captureIo, EDITORIAL, runInProcess } from './fixtures.js';

const USAGE = 'usage: pipeline viz [--format html|svg|dot|mermaid|json] [--out FILE] [--serve [--port N]]';

async function storeWith(pending: number): Promise<{ storeDir: string; ids: string[]; engine: Awaited<ReturnType<typeof testEngine>>['engine'] }> {
  const { engine, storeDir } = await testEngine();
  const ids: string[] = [];
  for (let i = 0; i < pending; i++) {
    const outcome = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (outcome.kind !== 'committed') throw new Error(outcome.kind);
    ids.push(outcome.id);
  }
  return { storeDir, ids, engine };
}

const counts = (stdout: string) => Object.fromEntries((JSON.parse(stdout) as { states: { id: string; count: number }[] }).states.map((s) => [s.id, s.count]));

describe('pipeline viz', () => {
  it.each([
    [['--format', 'png'], 'unknown format "png" (expected html, svg, dot, mermaid or json)'],
    [['--port', '80'], '--port needs --serve'],
    [['--serve', '--format', 'dot'], '--serve serves the html page; it cannot serve --format dot'],
    [['--serve', '--out', 'x.html'], '--serve and --out cannot be combined: write the file, or serve the page'],
    [['--serve', '--port', '99999'], '--port must be a whole number from 0 to 65535, got "99999"'],
    [['--json', '--format', 'dot'], '--json asks for --format json, not --format dot'],
  ])('refuses %j as a usage error', async (args, message) => {
    const result = await runInProcess(['viz', ...args]);
    expect(result).toEqual({ code: 1, stdout: '', stderr: `error: ${message}\n${USAGE}\n` });
  });

  it('prints the json graph with the counts of the store', async () => {
    const { storeDir, ids, engine } = await storeWith(3);
    await engine.apply(ids[0]!, 'confirm', { visibility: 'org' }, { stage: 'review', actor: 'cli' });
    const result = await runInProcess(['viz', '--format', 'json', '--store', storeDir]);
    expect(result.code).toBe(0);
    expect(counts(result.stdout)).toEqual({ pending: 2, confirmed: 1, passed: 0, approved: 0, rejected: 0, archived: 0 });
    expect((await runInProcess(['--json', 'viz', '--store', storeDir])).stdout).toBe(result.stdout);
  });

  it('prints the html page by default', async () => {
    const result = await runInProcess(['viz', '--store', tempDir()]);
    expect(result.code).toBe(0);
    expect(result.stdout.startsWith('<!doctype html>')).toBe(true);
  });

  it('writes --out atomically, says so on stderr, and prints nothing on stdout', async () => {
    const dir = tempDir();
    const store = tempDir();
    const result = await runInProcess(['--dir', ROOT, 'viz', '--format', 'dot', '--out', 'graph.dot', '--store', store], captureIo(dir));
    // (an explicit store nothing was written to is said first, as for every read-only command)
    expect(result).toEqual({ code: 0, stdout: '', stderr: `warning: no store at ${store}; nothing has been written there yet\nwrote graph.dot (dot)\n` });
    expect(readFileSync(path.join(dir, 'graph.dot'), 'utf8')).toBe((await runInProcess(['viz', '--format', 'dot', '--store', store])).stdout);
    expect(readdirSync(dir)).toEqual(['graph.dot']);
  });

  it('keeps the permissions of a file --out replaces: a private page stays private', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'private.html');
    writeFileSync(file, 'old', { mode: 0o600 });
    chmodSync(file, 0o600);
    const result = await runInProcess(['viz', '--out', file, '--store', tempDir()]);
    expect(result.code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').startsWith('<!doctype html>')).toBe(true);
  });

  it('refuses an --out it cannot write', async () => {
    const result = await runInProcess(['viz', '--out', path.join(tempDir(), 'missing', 'x.html'), '--store', tempDir()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^warning: no store at .*\nerror: cannot write .*x\.html: no such directory\n/);
  });

  it('renders any pipeline: the editorial one, with its own store', async () => {
    const { engine, storeDir } = await testEngine({ dir: EDITORIAL });
    await engine.propose(articleInput(), { stage: 'test', actor: 'cli' });
    const result = await runInProcess(['--dir', EDITORIAL, 'viz', '--format', 'json', '--store', storeDir]);
    expect(counts(result.stdout)).toEqual({ draft: 1, review: 0, scheduled: 0, published: 0, spiked: 0, withdrawn: 0 });
  });

  it('warns once about a malformed proposal file and does not count it', async () => {
    const { storeDir } = await storeWith(1);
    mkdirSync(path.join(storeDir, 'proposals'), { recursive: true });
    writeFileSync(path.join(storeDir, 'proposals', '01JBQ0000000000000000000ZZ.json'), '{"status": "pend');
    const result = await runInProcess(['viz', '--format', 'json', '--store', storeDir]);
    expect(result.code).toBe(0);
    expect(counts(result.stdout)['pending']).toBe(1);
    expect(result.stderr).toBe('warning: 01JBQ0000000000000000000ZZ: the proposal file is empty, truncated or not a JSON object — skipped, left as it is\n');
  });

  it('serves the page with live counts until Ctrl-C, then exits 0', async () => {
    const { storeDir, ids, engine } = await storeWith(2);
    const captured = captureIo();
    const running = runInProcess(['viz', '--serve', '--port', '0', '--store', storeDir], captured);
    const [, url] = await captured.waitForStderr(/serving (http:\/\/127\.0\.0\.1:\d+\/) \(Ctrl-C to stop\)/);
    const page = await fetch(url!);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain("connect-src 'self'");
    const state = async () =>
      (await (await fetch(`${url}state.json`)).json()) as { counts: Record<string, number>; proposals: Record<string, { id: string }[]> };
    expect((await state()).counts).toEqual({ pending: 2, confirmed: 0, passed: 0, approved: 0, rejected: 0, archived: 0 });
    await engine.apply(ids[1]!, 'pass', {}, { stage: 'review', actor: 'cli' });
    const after = await state();
    expect(after.counts).toEqual({ pending: 1, confirmed: 0, passed: 1, approved: 0, rejected: 0, archived: 0 });
    expect(after.proposals['passed']!.map((p) => p.id)).toEqual([ids[1]]);
    captured.interrupt();
    const result = await running;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/\nstopped\n$/);
    await expect(fetch(`${url}state.json`)).rejects.toThrow();
  });

  it('refuses a port in use, with a hint', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const store = tempDir();
      const result = await runInProcess(['viz', '--serve', '--port', String(port), '--store', store]);
      expect(result.code).toBe(1);
      const missing = `warning: no store at ${store}; nothing has been written there yet\n`;
      expect(result.stderr).toBe(`${missing}error: cannot listen on 127.0.0.1:${port}: the port is in use\n  hint: --port 0 picks a free port\n`);
    } finally {
      blocker.close();
    }
  });
});
