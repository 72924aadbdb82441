/**
 * SPEC §6: a key or a prompt is only ever sent to the configured origin, and secrets are never
 * printed. Every HTTP provider, against real local servers: a redirect is an outage naming only the
 * location's origin, and the second server receives nothing; user-info in base_url is sent as
 * Basic authorization and never printed; a server's error message is cut and its keys masked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../engine/providers/anthropic.js';
import { errorDetail } from '../../engine/providers/http.js';
import { createOpenAIProvider } from '../../engine/providers/openai.js';
import { maskSecrets } from '../../engine/providers/secret-scan.js';
import type { Provider } from '../../engine/providers/types.js';
import { FAST_RETRY, promptRequest, stall, startServer, testSettings, type LocalServer } from '../fixtures/providers/local-server.js';

const servers: LocalServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function serve(...args: Parameters<typeof startServer>): Promise<LocalServer> {
  const server = await startServer(...args);
  servers.push(server);
  return server;
}

const KEY = 'sk-ant-api03-Zx8Qw2Lr5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8';
const settings = testSettings({ env: { ANTHROPIC_API_KEY: KEY, OPENAI_API_KEY: KEY } });

const kinds: [string, (baseUrl: string) => Provider][] = [
  ['anthropic', (baseUrl) => createAnthropicProvider('claude-api', { kind: 'anthropic', base_url: baseUrl, model: 'm' }, settings, FAST_RETRY)],
  ['openai', (baseUrl) => createOpenAIProvider('gpt', { kind: 'openai', base_url: baseUrl, model: 'm', api_key_env: 'OPENAI_API_KEY' }, settings, FAST_RETRY)],
];

describe.each(kinds)('%s provider', (_kind, make) => {
  it.each([301, 302, 303, 307, 308])('treats a %i redirect to another origin as an outage, sending nothing there', async (status) => {
    const elsewhere = await serve(() => ({ body: { choices: [{ message: { content: 'ok' } }], content: [{ type: 'text', text: 'ok' }] } }));
    const location = `${elsewhere.url.replace('://', '://thief:pw@')}/steal?key=${KEY}`;
    const configured = await serve(() => ({ status, headers: { location } }));
    const result = await make(configured.url).call(promptRequest('the prompt'));
    expect(result).toEqual({ ok: false, outage: expect.stringMatching(new RegExp(`: HTTP ${status} redirect to ${elsewhere.url}, not followed$`)) });
    expect(JSON.stringify(result)).not.toMatch(/thief|pw@|steal|sk-ant/);
    expect(configured.received).toHaveLength(1);
    expect(elsewhere.received).toHaveLength(0);
  });

  it('sends user-info in base_url as Basic authorization to the bare URL, and never prints it', async () => {
    const server = await serve(() => ({ status: 500, body: { error: { message: 'down' } } }));
    const withUserInfo = server.url.replace('://', '://alice:s3cr3t-pass@');
    const result = await make(withUserInfo).call(promptRequest('p'));
    expect(result).toEqual({ ok: false, outage: expect.stringContaining('HTTP 500: down (gave up after 3 attempts)') });
    expect(JSON.stringify(result)).not.toMatch(/alice|s3cr3t/);
    expect(server.received).toHaveLength(3);
    const auth = server.received[0]!.headers['authorization'];
    // openai sends its key as the Authorization header; anthropic sends x-api-key, leaving Authorization to the user-info.
    expect([`Bearer ${KEY}`, `Basic ${Buffer.from('alice:s3cr3t-pass').toString('base64')}`]).toContain(auth);
  });

  it('ends every call in flight when the run is interrupted, with no warning for many calls on one signal', async () => {
    const server = await serve(() => stall);
    const provider = make(server.url);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const run = new AbortController();
      const calls = Array.from({ length: 20 }, () => provider.call(promptRequest('p', { signal: run.signal })));
      while (server.received.length < 20) await new Promise((resolve) => setTimeout(resolve, 5));
      run.abort();
      for (const result of await Promise.all(calls)) expect(result).toEqual({ ok: false, outage: expect.stringMatching(/: interrupted$/) });
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('takes a server that switches protocols (HTTP 101) for an outage at once, never waiting for the timeout', async () => {
    const server = await serve(() => (res) => {
      res.socket?.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n');
    });
    // (Its timeout outlasts the test's: a call that waited for it fails the test.)
    const slow = testSettings({ timeoutMs: 600_000, env: { ANTHROPIC_API_KEY: KEY, OPENAI_API_KEY: KEY } });
    const provider =
      _kind === 'openai'
        ? createOpenAIProvider('gpt', { kind: 'openai', base_url: server.url, model: 'm', api_key_env: 'OPENAI_API_KEY' }, slow, FAST_RETRY)
        : createAnthropicProvider('claude-api', { kind: 'anthropic', base_url: server.url, model: 'm' }, slow, FAST_RETRY);
    const result = await provider.call(promptRequest('p'));
    expect(result).toEqual({ ok: false, outage: expect.stringContaining('the server switched protocols (HTTP 101)') });
    expect(server.received).toHaveLength(3);
  });

  it('cuts a server error message and masks the keys it quotes', async () => {
    const message = `Invalid x-api-key ${KEY} (token ghp_${'a1'.repeat(20)}); ${'padding '.repeat(200)}`;
    await serve(() => ({ status: 401, body: { error: { message } } }));
    const result = await make(servers[0]!.url).call(promptRequest('p'));
    expect(result.ok).toBe(false);
    const outage = (result as { outage: string }).outage;
    expect(outage).toMatch(/: HTTP 401: Invalid x-api-key \*\*\* \(token \*\*\*\); padding/);
    expect(outage).not.toContain('sk-ant');
    expect(outage.length).toBeLessThan(260);
  });
});

describe('printing', () => {
  it('masks every key format and long opaque runs, and leaves ordinary words', () => {
    expect(maskSecrets(`key ${KEY} and AKIAABCDEFGHIJKLMNOP and x9${'Q'.repeat(40)} in https://u:p@host/x`)).toBe('key *** and *** and *** in ***host/x');
    expect(maskSecrets('an ordinary sentence about pnpm 8 and its lockfile_format_version_number_field')).toBe(
      'an ordinary sentence about pnpm 8 and its lockfile_format_version_number_field',
    );
  });

  it('quotes an error message on one line, and nothing from a body that is not JSON', () => {
    expect(errorDetail('{"error": {"message": "bad\\nrequest"}}')).toBe(': bad request');
    expect(errorDetail('not json')).toBe('');
  });
});
