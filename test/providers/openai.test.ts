import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAIProvider } from '../../engine/providers/openai.js';
import type { RetryPolicy } from '../../engine/providers/retry.js';
import {
  closedPortUrl,
  FAST_RETRY,
  inOrder,
  promptRequest,
  stall,
  startServer,
  streamUntilClosed,
  testSettings,
  type LocalServer,
  type Reply,
} from '../fixtures/providers/local-server.js';

let server: LocalServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A chat completion reply; `usage: 'absent'` leaves the usage key out. */
function completion(content: unknown, usage: unknown = { prompt_tokens: 12, completion_tokens: 5 }): Reply {
  const body: Record<string, unknown> = { id: 'c1', choices: [{ index: 0, message: { role: 'assistant', content } }] };
  if (usage !== 'absent') body['usage'] = usage;
  return { body };
}

async function serve(...replies: Reply[]): Promise<LocalServer> {
  server = await startServer(inOrder(...replies));
  return server;
}

function provider(def: Record<string, unknown>, settings = testSettings(), retry: Partial<RetryPolicy> = FAST_RETRY) {
  return createOpenAIProvider('local', { kind: 'openai', base_url: `${server!.url}/v1`, model: 'llama3.1', ...def }, settings, retry);
}

/**
 * Waits recorded instead of slept, each with the number of requests the server had received when
 * it began: a retry that waits has sent nothing more by then.
 */
function recordedSleeps(): { retry: Partial<RetryPolicy>; waits: number[]; sentBefore: number[] } {
  const waits: number[] = [];
  const sentBefore: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
    sentBefore.push(server!.received.length);
  };
  return { retry: { ...FAST_RETRY, sleep }, waits, sentBefore };
}

describe('openai provider', () => {
  it('posts the prompt as one user message with the key and settings, and answers with usage', async () => {
    const { received } = await serve(completion('{"score":1}'));
    const settings = testSettings({ env: { LOCAL_KEY: 'sk-test' } });
    const result = await provider({ api_key_env: 'LOCAL_KEY', temperature: 0.2, max_tokens: 300, json_mode: true }, settings).call(promptRequest('judge this'));
    expect(result).toEqual({ ok: true, text: '{"score":1}', usage: { tokens_in: 12, tokens_out: 5 } });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    });
    expect(received[0]!.json).toEqual({
      model: 'llama3.1',
      messages: [{ role: 'user', content: 'judge this' }],
      temperature: 0.2,
      max_tokens: 300,
      response_format: { type: 'json_object' },
    });
  });

  it('sends no Authorization header and no optional fields when none are set (local servers)', async () => {
    const { received } = await serve(completion('ok'));
    await createOpenAIProvider('local', { kind: 'openai', base_url: `${server!.url}/v1/`, model: 'm' }, testSettings()).call(promptRequest('p'));
    expect(received[0]!.path).toBe('/v1/chat/completions');
    expect(received[0]!.headers.authorization).toBeUndefined();
    expect(received[0]!.json).toEqual({ model: 'm', messages: [{ role: 'user', content: 'p' }] });
  });

  it('reports a missing or empty key variable without sending anything', async () => {
    const { received } = await serve(completion('ok'));
    for (const env of [{}, { OPENAI_API_KEY: '' }]) {
      const result = await provider({ api_key_env: 'OPENAI_API_KEY' }, testSettings({ env })).call(promptRequest('p'));
      expect(result).toEqual({ ok: false, outage: 'openai provider "local": environment variable OPENAI_API_KEY is not set' });
    }
    expect(received).toHaveLength(0);
  });

  it('reports usage it cannot read as null, never 0, and a reported 0 as 0', async () => {
    await serve(
      completion('a', 'absent'),
      completion('b', { prompt_tokens: -1, completion_tokens: 2.5 }),
      completion('c', { prompt_tokens: 0, completion_tokens: '7' }),
      completion('d', null),
      // Past any model's window: a run's total of such counts was Infinity.
      completion('e', { prompt_tokens: 1e308, completion_tokens: 1_000_000_001 }),
      completion('f', { prompt_tokens: 1_000_000_000, completion_tokens: 3 }),
    );
    const p = provider({});
    expect(await p.call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: null, tokens_out: null } });
    expect(await p.call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: null, tokens_out: null } });
    expect(await p.call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: 0, tokens_out: null } });
    expect(await p.call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: null, tokens_out: null } });
    expect(await p.call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: null, tokens_out: null } });
    expect(await p.call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: 1_000_000_000, tokens_out: 3 } });
  });

  it('waits for Retry-After (seconds) after a 429, then answers', async () => {
    const { received } = await serve({ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down' } } }, completion('ok'));
    const { retry, waits, sentBefore } = recordedSleeps();
    const result = await provider({}, testSettings(), retry).call(promptRequest('p'));
    expect(result).toMatchObject({ ok: true, text: 'ok' });
    expect(received).toHaveLength(2);
    expect(waits).toEqual([1000]);
    expect(sentBefore).toEqual([1]);
  });

  it('cuts a long Retry-After to retryAfterCapMs', async () => {
    await serve({ status: 503, headers: { 'retry-after': '120' } }, completion('ok'));
    const { retry, waits } = recordedSleeps();
    expect(await provider({}, testSettings({ retryAfterCapMs: 150 }), retry).call(promptRequest('p'))).toMatchObject({ ok: true });
    expect(waits).toEqual([150]);
  });

  it('retries a 500 until the attempts run out, then reports an outage', async () => {
    const { received } = await serve({ status: 500, body: 'oops' });
    expect(await provider({}).call(promptRequest('p'))).toEqual({ ok: false, outage: 'openai provider "local": HTTP 500 (gave up after 3 attempts)' });
    expect(received).toHaveLength(3);
  });

  it.each([408, 429, 502, 503, 529])('treats HTTP %i as transient', async (status) => {
    const { received } = await serve({ status }, completion('ok'));
    expect(await provider({}).call(promptRequest('p'))).toMatchObject({ ok: true, text: 'ok' });
    expect(received).toHaveLength(2);
  });

  it.each([400, 401, 403, 404, 422])('does not retry HTTP %i, quoting the server message', async (status) => {
    const { received } = await serve({ status, body: { error: { message: 'bad request here' } } });
    expect(await provider({}).call(promptRequest('p'))).toEqual({ ok: false, outage: `openai provider "local": HTTP ${status}: bad request here` });
    expect(received).toHaveLength(1);
  });

  it('reports a timeout as an outage after retrying it', async () => {
    const { received } = await serve(stall);
    const result = await provider({}, testSettings({ timeoutMs: 200, attempts: 2 })).call(promptRequest('p'));
    expect(result).toEqual({ ok: false, outage: 'openai provider "local": timed out after 200 ms (gave up after 2 attempts)' });
    expect(received).toHaveLength(2);
  });

  it('reports a refused connection as a transient outage', async () => {
    const url = await closedPortUrl();
    const p = createOpenAIProvider('down', { kind: 'openai', base_url: url, model: 'm' }, testSettings({ attempts: 2 }), FAST_RETRY);
    expect(await p.call(promptRequest('p'))).toEqual({
      ok: false,
      outage: 'openai provider "down": connection failed (ECONNREFUSED) (gave up after 2 attempts)',
    });
  });

  it('speaks TLS to an https URL, and plain HTTP to an http one, on the same server', async () => {
    const { received } = await serve(completion('{"a":1}'));
    // The local server speaks plain HTTP: a TLS client's handshake fails against it, and nothing
    // the server counts as a request arrives. (An https URL sent in the clear would be answered.)
    const secure = createOpenAIProvider(
      'tls',
      { kind: 'openai', base_url: `${server!.url.replace('http:', 'https:')}/v1`, model: 'm' },
      testSettings({ attempts: 1 }),
      FAST_RETRY,
    );
    const refused = await secure.call(promptRequest('p'));
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.outage).toMatch(/^openai provider "tls": connection failed \((EPROTO|ECONNRESET|.*SSL.*|.*TLS.*)\)/);
    expect(received).toHaveLength(0);
    expect(await provider({}).call(promptRequest('p'))).toMatchObject({ ok: true, text: '{"a":1}' });
    expect(received).toHaveLength(1);
  });

  it.each([
    ['a body that is not JSON', { body: 'Internal gateway page' }, 'garbage body (not JSON)'],
    ['JSON without choices', { body: { object: 'error' } }, 'garbage body (no answer in the JSON)'],
    ['content that is not a string', completion(null), 'garbage body (no answer in the JSON)'],
    ['an empty choices list', { body: { choices: [] } }, 'garbage body (no answer in the JSON)'],
  ])('reports %s as an outage without retrying', async (_name, reply, why) => {
    const { received } = await serve(reply);
    expect(await provider({}).call(promptRequest('p'))).toEqual({ ok: false, outage: `openai provider "local": ${why}` });
    expect(received).toHaveLength(1);
  });

  it('stops reading a response body far over the limit', async () => {
    const stream = streamUntilClosed(64 * 1024 * 1024);
    await serve(stream.reply);
    expect(await provider({}, testSettings({ maxAnswerBytes: 1000 })).call(promptRequest('p'))).toEqual({
      ok: false,
      outage: 'openai provider "local": response over 1000 bytes',
      oversize: true,
    });
    for (let i = 0; i < 100 && !stream.closedEarly(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stream.closedEarly()).toBe(true);
  });

  it('refuses an answer text over maxAnswerBytes, and accepts exactly the limit', async () => {
    await serve(completion('é'.repeat(501)), completion('é'.repeat(500)));
    const p = provider({}, testSettings({ maxAnswerBytes: 1000 }));
    expect(await p.call(promptRequest('p'))).toEqual({ ok: false, outage: 'openai provider "local": answer over 1000 bytes', oversize: true });
    expect(await p.call(promptRequest('p'))).toMatchObject({ ok: true, text: 'é'.repeat(500) });
  });

  it('treats an empty answer as no answer', async () => {
    await serve(completion('  \n'));
    expect(await provider({}).call(promptRequest('p'))).toEqual({ ok: false, outage: 'openai provider "local": answered nothing' });
  });

  it('stops at once when the call is aborted mid-request', async () => {
    const { received } = await serve(stall);
    const controller = new AbortController();
    const pending = provider({}, testSettings({ timeoutMs: 20_000 })).call(promptRequest('p', { signal: controller.signal }));
    for (let i = 0; i < 200 && received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    expect(await pending).toEqual({ ok: false, outage: 'openai provider "local": interrupted' });
    expect(received).toHaveLength(1);
  });

  it('is paid unless it says paid: false, and names its model', () => {
    expect(createOpenAIProvider('a', { kind: 'openai', base_url: 'http://x', model: 'm' }, testSettings())).toMatchObject({
      paid: true,
      model: 'm',
      kind: 'openai',
      deterministic: false,
    });
    expect(createOpenAIProvider('a', { kind: 'openai', base_url: 'http://x', model: 'm', paid: false }, testSettings()).paid).toBe(false);
  });
});
