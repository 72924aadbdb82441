import { afterEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_BASE_URL, createAnthropicProvider } from '../../engine/providers/anthropic.js';
import type { RetryPolicy } from '../../engine/providers/retry.js';
import { FAST_RETRY, inOrder, promptRequest, stall, startServer, testSettings, type LocalServer, type Reply } from '../fixtures/providers/local-server.js';

let server: LocalServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const KEY_ENV = { ANTHROPIC_API_KEY: 'sk-ant-test' };
const message = (content: unknown[], usage: unknown = { input_tokens: 40, output_tokens: 9 }): Reply => ({
  body: { id: 'msg_1', type: 'message', role: 'assistant', content, stop_reason: 'end_turn', usage },
});
const text = (value: string) => ({ type: 'text', text: value });

async function serve(...replies: Reply[]): Promise<LocalServer> {
  server = await startServer(inOrder(...replies));
  return server;
}

function provider(def: Record<string, unknown> = {}, settings = testSettings({ env: KEY_ENV }), retry: Partial<RetryPolicy> = FAST_RETRY) {
  return createAnthropicProvider('claude-api', { kind: 'anthropic', base_url: server!.url, model: 'claude-sonnet-4-5', ...def }, settings, retry);
}

describe('anthropic provider', () => {
  it('posts to /v1/messages with the key, the API version and max_tokens 1024 by default', async () => {
    const { received } = await serve(message([text('{"score":0.8}')]));
    const result = await provider().call(promptRequest('judge this'));
    expect(result).toEqual({ ok: true, text: '{"score":0.8}', usage: { tokens_in: 40, tokens_out: 9 } });
    expect(received[0]).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    });
    expect(received[0]!.json).toEqual({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'judge this' }] });
  });

  it('sends the configured max_tokens and temperature, reading the key from api_key_env', async () => {
    const { received } = await serve(message([text('ok')]));
    await provider({ api_key_env: 'MY_KEY', max_tokens: 200, temperature: 0 }, testSettings({ env: { MY_KEY: 'k2' } })).call(promptRequest('p'));
    expect(received[0]!.headers['x-api-key']).toBe('k2');
    expect(received[0]!.json).toMatchObject({ max_tokens: 200, temperature: 0 });
  });

  it('defaults to the public API address', () => {
    expect(ANTHROPIC_BASE_URL).toBe('https://api.anthropic.com');
  });

  it('joins the text blocks and ignores the others', async () => {
    await serve(message([{ type: 'thinking', thinking: 'hmm' }, text('{"a":'), { type: 'tool_use', id: 't', name: 'x', input: {} }, text('1}')]));
    expect(await provider().call(promptRequest('p'))).toMatchObject({ ok: true, text: '{"a":1}' });
  });

  it('reports unreadable usage as null, never 0', async () => {
    await serve(message([text('ok')], { input_tokens: null }));
    expect(await provider().call(promptRequest('p'))).toMatchObject({ usage: { tokens_in: null, tokens_out: null } });
  });

  it('reports a missing ANTHROPIC_API_KEY without sending anything', async () => {
    const { received } = await serve(message([text('ok')]));
    expect(await provider({}, testSettings({ env: {} })).call(promptRequest('p'))).toEqual({
      ok: false,
      outage: 'anthropic provider "claude-api": environment variable ANTHROPIC_API_KEY is not set',
    });
    expect(received).toHaveLength(0);
  });

  it('retries an overloaded API (529) and answers', async () => {
    const { received } = await serve(
      { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
      message([text('ok')]),
    );
    expect(await provider().call(promptRequest('p'))).toMatchObject({ ok: true, text: 'ok' });
    expect(received).toHaveLength(2);
  });

  it('does not retry a 400, quoting the API error message', async () => {
    const { received } = await serve({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: too large' } } });
    expect(await provider().call(promptRequest('p'))).toEqual({ ok: false, outage: 'anthropic provider "claude-api": HTTP 400: max_tokens: too large' });
    expect(received).toHaveLength(1);
  });

  it('reports a body without a content list as a garbage body', async () => {
    const { received } = await serve({ body: { type: 'message', content: 'not a list' } });
    expect(await provider().call(promptRequest('p'))).toEqual({ ok: false, outage: 'anthropic provider "claude-api": garbage body (no answer in the JSON)' });
    expect(received).toHaveLength(1);
  });

  it('treats an answer with no text block as no answer', async () => {
    await serve(message([{ type: 'tool_use', id: 't', name: 'x', input: {} }]));
    expect(await provider().call(promptRequest('p'))).toEqual({ ok: false, outage: 'anthropic provider "claude-api": answered nothing' });
  });

  it('refuses an answer over maxAnswerBytes', async () => {
    await serve(message([text('x'.repeat(600)), text('y'.repeat(600))]));
    expect(await provider({}, testSettings({ env: KEY_ENV, maxAnswerBytes: 1000 })).call(promptRequest('p'))).toEqual({
      ok: false,
      outage: 'anthropic provider "claude-api": answer over 1000 bytes',
      oversize: true,
    });
  });

  it('reports a timeout as an outage', async () => {
    await serve(stall);
    expect(await provider({}, testSettings({ env: KEY_ENV, timeoutMs: 200, attempts: 1 })).call(promptRequest('p'))).toEqual({
      ok: false,
      outage: 'anthropic provider "claude-api": timed out after 200 ms (gave up after 1 attempt)',
    });
  });
});
