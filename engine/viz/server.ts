/**
 * `viz --serve`: a small HTTP server on the loopback interface. `/` is the page (rendered fresh on
 * each load), `/state.json` the live snapshot the page polls. Nothing else is served, only GET and
 * HEAD are answered, and a request whose Host is not this server's loopback address is refused, so
 * a web page elsewhere cannot read the store through DNS rebinding.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface VizServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  page(): Promise<string>;
  state(): Promise<unknown>;
  /** A request failed on the server's side (the page shows it as disconnected and retries). */
  onError?(error: unknown): void;
}

export interface VizServer {
  url: string;
  port: number;
  /** Stop listening and drop open connections; resolves when the server is closed. */
  close(): Promise<void>;
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

function send(response: ServerResponse, status: number, type: string, body: string, head: boolean, extra: Record<string, string> = {}): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': String(Buffer.byteLength(body)), ...extra });
  response.end(head ? undefined : body);
}

function allowedHosts(host: string, port: number): Set<string> {
  return new Set([`${host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
}

/** Start the server; rejects when the port cannot be bound (e.g. EADDRINUSE). */
export function startVizServer(options: VizServerOptions): Promise<VizServer> {
  const host = options.host ?? '127.0.0.1';
  let hosts = new Set<string>();

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const head = request.method === 'HEAD';
    if (request.method !== 'GET' && !head) return send(response, 405, 'text/plain; charset=utf-8', 'method not allowed\n', false, { allow: 'GET, HEAD' });
    if (!hosts.has(String(request.headers.host ?? '').toLowerCase())) return send(response, 403, 'text/plain; charset=utf-8', 'unexpected Host header\n', head);
    const pathname = new URL(request.url ?? '/', 'http://localhost').pathname;
    try {
      if (pathname === '/' || pathname === '/index.html') return send(response, 200, 'text/html; charset=utf-8', await options.page(), head);
      if (pathname === '/state.json') return send(response, 200, 'application/json; charset=utf-8', JSON.stringify(await options.state()), head);
    } catch (error) {
      options.onError?.(error);
      return send(response, 500, 'text/plain; charset=utf-8', 'could not read the store\n', head);
    }
    if (pathname === '/favicon.ico') {
      response.writeHead(204, SECURITY_HEADERS);
      return void response.end();
    }
    return send(response, 404, 'text/plain; charset=utf-8', 'not found\n', head);
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      options.onError?.(error);
      if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', 'internal error\n', false);
      else response.destroy();
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      hosts = allowedHosts(host, port);
      const shown = host.includes(':') ? `[${host}]` : host;
      resolve({
        url: `http://${shown}:${port}/`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Keep-alive connections (the polling page) would otherwise hold close() open.
            server.closeAllConnections();
          }),
      });
    });
  });
}
