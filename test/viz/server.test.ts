/**
 * The live server on its own: what it serves, what it refuses (other paths, methods and Host
 * headers), that it binds the loopback interface only, and that close() ends open connections.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startVizServer, type VizServer } from '../../engine/viz/index.js';

const started: VizServer[] = [];
afterEach(async () => {
  while (started.length) await started.pop()!.close();
});

async function start(options: Partial<Parameters<typeof startVizServer>[0]> = {}): Promise<VizServer> {
  let polls = 0;
  const server = await startVizServer({ port: 0, page: async () => '<!doctype html><p>page</p>', state: async () => ({ polls: ++polls }), ...options });
  started.push(server);
  return server;
}

function get(
  url: string,
  options: { method?: string; host?: string } = {},
): Promise<{ status: number; type: string | undefined; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname, method: options.method ?? 'GET', headers: options.host ? { host: options.host } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('viz server', () => {
  it('serves the page at / and the live state at /state.json, never cached', async () => {
    const server = await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await get(server.url);
    expect(page).toMatchObject({ status: 200, type: 'text/html; charset=utf-8', body: '<!doctype html><p>page</p>' });
    expect(page.headers['cache-control']).toBe('no-store');
    expect(await get(`${server.url}state.json`)).toMatchObject({ status: 200, type: 'application/json; charset=utf-8', body: '{"polls":1}' });
    expect((await get(`${server.url}state.json`)).body).toBe('{"polls":2}');
  });

  it('answers a HEAD without a body, 404 for anything else, 405 for other methods', async () => {
    const server = await start();
    expect(await get(server.url, { method: 'HEAD' })).toMatchObject({ status: 200, body: '' });
    expect((await get(`${server.url}etc/passwd`)).status).toBe(404);
    expect((await get(`${server.url}favicon.ico`)).status).toBe(204);
    const post = await get(server.url, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers['allow']).toBe('GET, HEAD');
  });

  it('refuses a request for another host name (DNS rebinding)', async () => {
    const server = await start();
    expect((await get(server.url, { host: `evil.example:${server.port}` })).status).toBe(403);
    expect((await get(server.url, { host: `localhost:${server.port}` })).status).toBe(200);
  });

  it('answers 500 and reports the error when the store cannot be read', async () => {
    const errors: unknown[] = [];
    const server = await start({ state: async () => Promise.reject(new Error('disk on fire')), onError: (error) => errors.push(error) });
    expect(await get(`${server.url}state.json`)).toMatchObject({ status: 500, body: 'could not read the store\n' });
    expect(errors).toEqual([new Error('disk on fire')]);
  });

  it('refuses a port that is taken', async () => {
    const server = await start();
    await expect(startVizServer({ port: server.port, page: async () => '', state: async () => ({}) })).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });

  it('closes promptly even with a keep-alive connection open', async () => {
    const server = await startVizServer({ port: 0, page: async () => 'x', state: async () => ({}) });
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve) => request(server.url, { agent }, (res) => res.resume().on('end', resolve)).end());
    const closed = Date.now();
    await server.close();
    expect(Date.now() - closed).toBeLessThan(1000);
    agent.destroy();
    await expect(get(server.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
