/**
 * `pipeline viz` in a real headless Chromium (Debian's chromium, driven by playwright-core): the
 * generated HTML file and the --serve page show every state and transition label and the store's
 * counts, list a state's proposals on click, update a count live when a proposal moves, and make
 * no network request but to the local server. Needs `npm run build` first (npm run test:e2e does).
 * Screenshots land in test-results/viz/.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildGraph, type VizGraph } from '../../engine/viz/index.js';
import { BIN, proposalInput, ROOT, tempDir, testEngine } from '../helpers.js';
import { articleInput, EDITORIAL } from '../viz/fixtures.js';

const run = promisify(execFile);
const ENV = { ...process.env, PIPELINE_CONFIG_CACHE: 'off', NO_COLOR: '1' };
const SCREENSHOTS = path.join(ROOT, 'test-results', 'viz');
const CLAIM = 'pnpm 8 refuses lockfiles written by pnpm 7 until they are regenerated';

let browser: Browser;
const children: ChildProcess[] = [];

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => browser?.close());
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A page that records every request it makes and every script error or console error. */
async function open(url: string): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(url);
  return { page, requests, errors };
}

const count = (page: Page, state: string) => page.locator(`svg [data-count-for="${state}"]`).textContent();

/** Every state box, count, transition label and repeat of `graph` is visible on the page. */
async function expectDrawn(page: Page, graph: VizGraph, counts: Record<string, number>): Promise<void> {
  for (const state of graph.states) {
    const box = page.locator(`svg .state[data-state="${state.id}"]`);
    expect(await box.isVisible(), state.id).toBe(true);
    expect(await box.locator('.name').textContent()).toBe(state.id);
    expect(await count(page, state.id), `count of ${state.id}`).toBe(String(counts[state.id] ?? 0));
    expect(await page.locator(`#counts td[data-count-for="${state.id}"]`).textContent()).toBe(String(counts[state.id] ?? 0));
  }
  for (const t of graph.transitions) {
    const edge = page.locator(`svg g.transition[data-from="${t.from}"][data-to="${t.to}"][data-event="${t.event}"]`);
    const lines = [t.event, ...(t.guard ? [`[${t.guard}]`] : [])];
    for (const line of lines) expect(await edge.locator('text', { hasText: line }).first().isVisible(), `${t.from} → ${t.to}: ${line}`).toBe(true);
  }
  for (const repeat of graph.repeats) {
    expect(await page.locator(`svg .state[data-state="${repeat.state}"] .repeats`).textContent()).toContain(repeat.event);
  }
}

/** Start `pipeline viz --serve --port 0` and read its URL from stderr. */
async function serve(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'viz', '--serve', '--port', '0', ...args], { cwd: ROOT, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /serving (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`viz --serve exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

describe('pipeline viz in Chromium', () => {
  it('draws the html file offline: every state and label, the store counts, proposals on click, no request', async () => {
    const { engine, storeDir, pipeline } = await testEngine();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      if (outcome.kind === 'committed') ids.push(outcome.id);
    }
    await engine.apply(ids[2]!, 'pass', {}, { stage: 'review', actor: 'cli' });
    const file = path.join(tempDir(), 'lesson.html');
    await run(process.execPath, [BIN, 'viz', '--out', file, '--store', storeDir], { cwd: ROOT, env: ENV });

    const url = pathToFileURL(file).href;
    const { page, requests, errors } = await open(url);
    const counts = { pending: 2, passed: 1 };
    await expectDrawn(page, buildGraph(pipeline.lifecycle, counts), counts);
    expect(await page.locator('#legend').isVisible()).toBe(true);

    await page.locator('svg .state[data-state="pending"]').click();
    const panel = page.locator('#panel');
    for (const id of ids.slice(0, 2)) {
      const row = panel.locator(`li[data-proposal="${id}"]`);
      expect(await row.isVisible()).toBe(true);
      expect(await row.textContent()).toBe(`${id} ${CLAIM}`);
    }
    expect(await panel.locator('ul.events li').allTextContents()).toEqual([
      'confirm → confirmed [jury_checks_independence]refused when the guard fails: a private proposal runs no jury, so it cannot be version_independent (confirm at org or public)',
      'pass → passed',
      'defer accepted, changes nothing',
      'unconfirm accepted, changes nothing',
      'unpass accepted, changes nothing',
    ]);
    // approved: no proposal in it here, and the pool's events leave it (SPEC §5.8).
    await page.locator('#counts tr[data-state="approved"]').click();
    expect(await panel.locator('.empty').allTextContents()).toEqual(['No proposals in this state.']);
    const leaving = await panel.locator('ul.events li').allTextContents();
    expect(leaving.some((text) => text.startsWith('archive → archived'))).toBe(true);
    expect(leaving.some((text) => text.startsWith('record_outcome'))).toBe(true);

    await page.screenshot({ path: path.join(SCREENSHOTS, 'lesson-file.png'), fullPage: true });
    expect(requests).toEqual([url]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('draws a second, different machine', async () => {
    const { engine, storeDir, pipeline } = await testEngine({ dir: EDITORIAL });
    const first = await engine.propose(articleInput('Bridge reopens after repairs'), { stage: 'test', actor: 'cli' });
    if (first.kind !== 'committed') throw new Error(first.kind);
    await engine.apply(first.id, 'submit', {}, { stage: 'desk', actor: 'cli' });
    await engine.propose(articleInput(), { stage: 'test', actor: 'cli' });
    const file = path.join(tempDir(), 'article.html');
    await run(process.execPath, [BIN, '--dir', EDITORIAL, 'viz', '--out', file, '--store', storeDir], { cwd: ROOT, env: ENV });

    const url = pathToFileURL(file).href;
    const { page, requests, errors } = await open(url);
    const counts = { draft: 1, review: 1 };
    await expectDrawn(page, buildGraph(pipeline.lifecycle, counts), counts);
    await page.locator('svg .state[data-state="review"]').click();
    expect(await page.locator(`#panel li[data-proposal="${first.id}"]`).textContent()).toBe(`${first.id} Bridge reopens after repairs`);
    // spiked: nothing in it, and nothing leaves it.
    await page.locator('svg .state[data-state="spiked"]').click();
    expect(await page.locator('#panel .empty').allTextContents()).toEqual(['No proposals in this state.', 'No event leaves this state.']);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'article-file.png'), fullPage: true });
    expect(requests).toEqual([url]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('serves a page whose counts follow the store, talks only to its server, and stops on Ctrl-C with exit 0', async () => {
    const { engine, storeDir, pipeline } = await testEngine();
    const outcome = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (outcome.kind !== 'committed') throw new Error(outcome.kind);
    const { child, url, stderr } = await serve(['--store', storeDir]);

    const { page, requests, errors } = await open(url);
    await expectDrawn(page, buildGraph(pipeline.lifecycle, { pending: 1 }), { pending: 1 });
    await page.locator('svg .state[data-state="confirmed"]').click();
    expect(await page.locator('#panel .empty').first().textContent()).toBe('No proposals in this state.');

    await run(process.execPath, [BIN, 'confirm', outcome.id, '--visibility', 'org', '--store', storeDir], { cwd: ROOT, env: ENV });
    await expect.poll(() => count(page, 'confirmed'), { timeout: 10_000, interval: 200 }).toBe('1');
    expect(await count(page, 'pending')).toBe('0');
    expect(await page.locator('#counts td[data-count-for="confirmed"]').textContent()).toBe('1');
    expect(await page.locator(`#panel li[data-proposal="${outcome.id}"]`).textContent()).toBe(`${outcome.id} ${CLAIM}`);
    expect(await page.locator('#live').textContent()).toMatch(/^live · updated /);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'lesson-served.png'), fullPage: true });

    const origin = new URL(url).origin;
    expect(requests.length).toBeGreaterThan(1);
    expect(requests.filter((request) => !request.startsWith(`${origin}/`))).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();

    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    expect(await exit).toBe(0);
    expect(stderr()).toMatch(/stopped\n$/);
  });
});
