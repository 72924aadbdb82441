/**
 * The provider contract, run against every model kind, each backed by a real local fixture (a
 * program for `command`, an HTTP server for `openai` and `anthropic`): an answer is
 * {ok, text, usage} with counts or null; every failure is {ok: false, outage} and never a throw.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelSettings } from '../../engine/providers/index.js';
import { createAnthropicProvider } from '../../engine/providers/anthropic.js';
import { createCommandProvider } from '../../engine/providers/command.js';
import { createOpenAIProvider } from '../../engine/providers/openai.js';
import type { Provider, ProviderResult } from '../../engine/providers/types.js';
import { FAST_RETRY, promptRequest, stall, startServer, testSettings, type LocalServer, type Reply } from '../fixtures/providers/local-server.js';

type Backend = 'answer' | 'answer-without-usage' | 'fail' | 'stall';

interface Harness {
  kind: Provider['kind'];
  /** A provider named "subject" whose backend behaves as `backend`. */
  make(backend: Backend, settings: ModelSettings): Promise<Provider>;
}

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers');
const script = (name: string, ...args: string[]) => [process.execPath, path.join(FIXTURES, name), ...args].map((part) => `'${part}'`).join(' ');

const servers: LocalServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function serve(reply: Reply): Promise<string> {
  const server = await startServer(() => reply);
  servers.push(server);
  return server.url;
}

const ANSWER = '{"score": 0.5}';

const harnesses: Harness[] = [
  {
    kind: 'command',
    async make(backend, settings) {
      const command = { answer: script('echo.mjs'), 'answer-without-usage': script('echo.mjs'), fail: script('exit.mjs', '2'), stall: script('sleep.mjs') }[
        backend
      ];
      return createCommandProvider('subject', { kind: 'command', command, model: 'fixture' }, settings, FAST_RETRY);
    },
  },
  {
    kind: 'openai',
    async make(backend, settings) {
      const choices = [{ message: { role: 'assistant', content: ANSWER } }];
      const reply: Reply = {
        answer: { body: { choices, usage: { prompt_tokens: 3, completion_tokens: 4 } } },
        'answer-without-usage': { body: { choices } },
        fail: { status: 500 },
        stall,
      }[backend];
      return createOpenAIProvider('subject', { kind: 'openai', base_url: await serve(reply), model: 'fixture' }, settings, FAST_RETRY);
    },
  },
  {
    kind: 'anthropic',
    async make(backend, settings) {
      const content = [{ type: 'text', text: ANSWER }];
      const reply: Reply = {
        answer: { body: { content, usage: { input_tokens: 3, output_tokens: 4 } } },
        'answer-without-usage': { body: { content } },
        fail: { status: 500 },
        stall,
      }[backend];
      return createAnthropicProvider(
        'subject',
        { kind: 'anthropic', base_url: await serve(reply), model: 'fixture' },
        { ...settings, env: { ANTHROPIC_API_KEY: 'k' } },
        FAST_RETRY,
      );
    },
  },
];

const isCount = (value: unknown) => value === null || (typeof value === 'number' && Number.isInteger(value) && value >= 0);

function expectOutage(result: ProviderResult): void {
  expect(Object.keys(result).sort()).toEqual(['ok', 'outage']);
  expect(result.ok).toBe(false);
  // Outage lines name the provider so a run summary says which one failed.
  expect((result as { outage: string }).outage).toMatch(/^\w+ provider "subject": \S/);
}

describe.each(harnesses)('provider contract: $kind', (harness) => {
  it('describes itself: kind, model, paid by default, not deterministic', async () => {
    const provider = await harness.make('answer', testSettings());
    expect(provider).toMatchObject({ name: 'subject', kind: harness.kind, model: 'fixture', paid: true, deterministic: false });
  });

  it('answers {ok, text, usage} with each count an integer or null', async () => {
    const result = await (await harness.make('answer', testSettings())).call(promptRequest(ANSWER));
    expect(result).toMatchObject({ ok: true, text: ANSWER });
    expect(Object.keys(result).sort()).toEqual(['ok', 'text', 'usage']);
    const usage = (result as unknown as { usage: Record<string, unknown> }).usage;
    expect(Object.keys(usage).sort()).toEqual(['tokens_in', 'tokens_out']);
    expect(isCount(usage['tokens_in']) && isCount(usage['tokens_out'])).toBe(true);
  });

  it('reports usage it was not told as null, never 0', async () => {
    const result = await (await harness.make('answer-without-usage', testSettings())).call(promptRequest(ANSWER));
    expect(result).toMatchObject({ ok: true, usage: { tokens_in: null, tokens_out: null } });
  });

  it('turns a failing backend into an outage after its attempts, without throwing', async () => {
    const result = await (await harness.make('fail', testSettings({ attempts: 2 }))).call(promptRequest(ANSWER));
    expectOutage(result);
    expect((result as { outage: string }).outage).toMatch(/\(gave up after 2 attempts\)$/);
  });

  it('turns a backend that never answers into a timeout outage', async () => {
    const result = await (await harness.make('stall', testSettings({ timeoutMs: 300, attempts: 1 }))).call(promptRequest(ANSWER));
    expectOutage(result);
    expect((result as { outage: string }).outage).toContain('timed out after 300 ms');
  });

  it('turns an aborted call into an "interrupted" outage, without throwing', async () => {
    const provider = await harness.make('stall', testSettings({ timeoutMs: 20_000 }));
    const before = await provider.call(promptRequest(ANSWER, { signal: AbortSignal.abort() }));
    expect(before).toEqual({ ok: false, outage: `${harness.kind} provider "subject": interrupted` });
    const started = Date.now();
    const during = await provider.call(promptRequest(ANSWER, { signal: AbortSignal.timeout(300) }));
    expect(during).toEqual({ ok: false, outage: `${harness.kind} provider "subject": interrupted` });
    // Ended by the run's signal, not by the call's own 20 s timeout: the request itself was stopped.
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
