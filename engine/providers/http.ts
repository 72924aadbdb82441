/**
 * The HTTP half shared by the `openai` and `anthropic` providers: one JSON POST per attempt with a
 * timeout, a capped body read, and a classification of every failure as transient (retried) or
 * permanent — so a provider only says how to build its request and how to read its answer.
 */
import type { IncomingMessage } from 'node:http';
import type { Usage } from '../jury/verdict.js';
import type { ModelSettings } from './index.js';
import { parseRetryAfter, withRetries, type CallAttempt, type RetryPolicy } from './retry.js';
import { maskSecrets } from './secret-scan.js';
import type { ProviderResult } from './types.js';

export interface JsonRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** What a provider read out of a 2xx JSON body; undefined when the body lacks the expected fields. */
export type ParseAnswer = (json: unknown) => { text: string; usage: Usage } | undefined;

/**
 * The limit is on the answer; the body around it may be larger (JSON escaping can double it, plus
 * the envelope), so the body is capped at 2× the answer limit plus this, then the answer is checked.
 */
const ENVELOPE_BYTES = 64 * 1024;
/** Enough of an error body to quote the server's message. */
const ERROR_BODY_BYTES = 4 * 1024;

type Capped = { ok: true; text: string } | { ok: false; over: true };

/**
 * Connections are kept alive between calls (a run makes thousands to one server), and an idle one
 * never keeps the process alive. The number of calls in flight is each provider's own cap.
 * node:http, and node:https (with tls) only for an https URL, are loaded on the first call that
 * needs them: most commands never call a model, and loading both is ~10 ms of every start (of a
 * run's first requests, for a run whose providers all speak plain http — a local server).
 */
type Transport = { request: typeof import('node:http').request; agent: import('node:http').Agent };
let plain: Promise<Transport> | undefined;
let secured: Promise<Transport> | undefined;
function transport(secure: boolean): Promise<Transport> {
  if (secure) return (secured ??= import('node:https').then((https) => ({ request: https.request, agent: new https.Agent({ keepAlive: true }) })));
  return (plain ??= import('node:http').then((http) => ({ request: http.request, agent: new http.Agent({ keepAlive: true }) })));
}

/** A response as a stage reads it: status, one header, and a body read at most to a limit. */
interface Reply {
  status: number;
  header(name: string): string | null;
  /** Read the body up to `maxBytes`; past that, stop reading and drop the connection. */
  read(maxBytes: number): Promise<Capped>;
  /** Leave the body unread and drop the connection. */
  drop(): void;
}

/**
 * One POST over node:http(s) — not `fetch`, whose web streams cost several times the CPU per call
 * (a run at high concurrency is bound by it). `abort` ends the request and any body read with
 * `error`. A redirect is returned as it is, never followed.
 */
async function post(url: URL, headers: Record<string, string>, body: string, abort: AbortSignal): Promise<Reply> {
  const { request: send, agent } = await transport(url.protocol === 'https:');
  return new Promise((resolve, reject) => {
    if (abort.aborted) {
      reject(new Error('aborted'));
      return;
    }
    const data = Buffer.from(body, 'utf8');
    const request = send(url, {
      method: 'POST',
      agent,
      headers: { ...headers, 'content-length': String(data.length) },
    });
    // The promise settles whatever the server does: an abort rejects it at once (a request whose
    // socket is already gone emits nothing more), and so does a request that ends with no response.
    const onAbort = () => {
      request.destroy(new Error('aborted'));
      reject(new Error('aborted'));
    };
    abort.addEventListener('abort', onAbort, { once: true });
    const settle = () => abort.removeEventListener('abort', onAbort);
    request.on('error', (error) => {
      settle();
      reject(error);
    });
    // A 101 answer switches protocols: node:http then emits no response and no error, only this (or,
    // with no listener, a close) — the call would wait for its timeout and its run could end early.
    request.on('upgrade', (_response: IncomingMessage, socket: import('node:net').Socket) => {
      socket.destroy();
      settle();
      reject(new Error('the server switched protocols (HTTP 101), which is no answer'));
    });
    request.on('close', () => {
      settle();
      reject(new Error('the connection closed before a response'));
    });
    request.on('response', (response: IncomingMessage) => {
      resolve({
        status: response.statusCode ?? 0,
        header: (name) => {
          const value = response.headers[name];
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
        },
        drop: () => {
          settle();
          response.destroy();
        },
        read: (maxBytes) =>
          new Promise<Capped>((done, fail) => {
            const chunks: Buffer[] = [];
            let total = 0;
            response.on('data', (chunk: Buffer) => {
              total += chunk.length;
              if (total > maxBytes) {
                settle();
                response.destroy();
                done({ ok: false, over: true });
                return;
              }
              chunks.push(chunk);
            });
            response.on('end', () => {
              settle();
              done({ ok: true, text: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)).toString('utf8') });
            });
            response.on('error', (error) => {
              settle();
              fail(error);
            });
            // Destroyed (aborted, timed out) before its end: no 'end' will come.
            response.on('close', () => {
              if (!response.complete && total <= maxBytes) fail(new Error(abort.aborted ? 'aborted' : 'the connection closed before the end of the response'));
            });
          }),
      });
    });
    request.end(data);
  });
}

const isTransientStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/** How much of a server's error message an outage line quotes. */
const ERROR_DETAIL_CHARS = 160;

/**
 * The server's own error message, when the body carries one: cut short, on one line, with anything
 * key-shaped masked (servers quote the key they refused) — an outage line is printed and logged.
 */
export function errorDetail(text: string): string {
  try {
    const json = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof json.error === 'string' ? json.error : (json.error?.message ?? json.message);
    if (typeof message === 'string' && message.trim()) {
      const line = message
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, ERROR_DETAIL_CHARS * 4);
      return `: ${maskSecrets(line).slice(0, ERROR_DETAIL_CHARS)}`;
    }
  } catch {
    // Not JSON: the status alone says enough.
  }
  return '';
}

/** Where a redirect points, as an origin only (never a path, a query or user-info). */
function redirectTarget(location: string | null, base: string): string {
  if (!location) return 'no location';
  try {
    const target = new URL(location, base);
    return target.origin !== 'null' ? target.origin : `${target.protocol}//${target.host}`;
  } catch {
    return 'an unreadable location';
  }
}

/**
 * Split user-info off a URL: fetch refuses a URL that carries it (and would quote it in the
 * error), so it is sent as Basic authorization instead, and the URL is used without it.
 */
export function splitUserInfo(url: string): { url: string; basic?: string } {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return { url };
    const basic = Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString('base64');
    parsed.username = '';
    parsed.password = '';
    return { url: parsed.toString(), basic };
  } catch {
    return { url };
  }
}

/** A provider's endpoint, parsed once: a run sends thousands of requests to a handful of URLs. */
interface Endpoint {
  url: string;
  parsed: URL;
  basic?: string;
}
const endpoints = new Map<string, Endpoint>();
const ENDPOINTS_KEPT = 64;

/** The endpoint of `url` (user-info split off); throws when it is not a URL, as `new URL` does. */
function endpointOf(url: string): Endpoint {
  let endpoint = endpoints.get(url);
  if (endpoint === undefined) {
    const { url: plain, basic } = splitUserInfo(url);
    endpoint = { url: plain, parsed: new URL(plain), ...(basic !== undefined ? { basic } : {}) };
    if (endpoints.size >= ENDPOINTS_KEPT) endpoints.clear();
    endpoints.set(url, endpoint);
  }
  return endpoint;
}

function connectionReason(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  // Library messages may quote the URL: masked like any other text that reaches an outage line.
  return maskSecrets(String(cause?.message ?? (error as Error).message ?? error)).slice(0, ERROR_DETAIL_CHARS);
}

/**
 * The attempts a run's signal ends, behind one listener per signal: AbortSignal.any costs ~30 µs
 * a call here, and a listener per attempt would warn past ten calls in flight. Returns the
 * attempt's leave().
 */
const followers = new WeakMap<AbortSignal, Set<AbortController>>();
function follow(signal: AbortSignal, attempt: AbortController): () => void {
  if (signal.aborted) {
    attempt.abort();
    return () => {};
  }
  let attempts = followers.get(signal);
  if (!attempts) {
    const each = new Set<AbortController>();
    attempts = each;
    followers.set(signal, each);
    signal.addEventListener(
      'abort',
      () => {
        for (const one of each) one.abort();
        each.clear();
      },
      { once: true },
    );
  }
  attempts.add(attempt);
  const own = attempts;
  return () => own.delete(attempt);
}

const hasHeader = (headers: Record<string, string>, name: string) => Object.keys(headers).some((key) => key.toLowerCase() === name);

async function attemptOnce(
  label: string,
  request: JsonRequest,
  settings: ModelSettings,
  parse: ParseAnswer,
  signal?: AbortSignal,
): Promise<CallAttempt<{ text: string; usage: Usage }>> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), settings.timeoutMs);
  // The run's signal ends the attempt too; which of the two fired is told apart below by asking
  // the run's signal first.
  const leave = signal ? follow(signal, timeout) : undefined;
  try {
    const { url, parsed, basic } = endpointOf(request.url);
    const headers = basic && !hasHeader(request.headers, 'authorization') ? { ...request.headers, authorization: `Basic ${basic}` } : request.headers;
    // Never follow a redirect: the key and the prompt go to the configured origin or nowhere.
    const response = await post(parsed, headers, JSON.stringify(request.body), timeout.signal);
    if (response.status >= 300 && response.status < 400) {
      response.drop();
      const reason = `${label}: HTTP ${response.status} redirect to ${redirectTarget(response.header('location'), url)}, not followed`;
      return { ok: false, transient: false, reason };
    }
    if (response.status < 200 || response.status >= 300) {
      const body = await response.read(ERROR_BODY_BYTES);
      const reason = `${label}: HTTP ${response.status}${body.ok ? errorDetail(body.text) : ''}`;
      if (!isTransientStatus(response.status)) return { ok: false, transient: false, reason };
      return { ok: false, transient: true, reason, retryAfterMs: parseRetryAfter(response.header('retry-after')) };
    }
    const body = await response.read(settings.maxAnswerBytes * 2 + ENVELOPE_BYTES);
    if (!body.ok) return { ok: false, transient: false, oversize: true, reason: `${label}: response over ${settings.maxAnswerBytes} bytes` };
    let json: unknown;
    try {
      json = JSON.parse(body.text);
    } catch {
      return { ok: false, transient: false, reason: `${label}: garbage body (not JSON)` };
    }
    const answer = parse(json);
    if (!answer) return { ok: false, transient: false, reason: `${label}: garbage body (no answer in the JSON)` };
    return { ok: true, value: answer };
  } catch (error) {
    if (signal?.aborted) return { ok: false, transient: false, reason: `${label}: interrupted` };
    if (timeout.signal.aborted) return { ok: false, transient: true, reason: `${label}: timed out after ${settings.timeoutMs} ms` };
    return { ok: false, transient: true, reason: `${label}: connection failed (${connectionReason(error)})` };
  } finally {
    clearTimeout(timer);
    leave?.();
  }
}

/** Outage lines always name the provider, including the bare "interrupted" from withRetries. */
export function labelled(label: string, outage: string): string {
  return outage.startsWith(label) ? outage : `${label}: ${outage}`;
}

/**
 * POST `request` with retries (transient failures only) and turn the answer into a result: an
 * outage for any failure, an over-large answer or an empty one. Never throws for these.
 */
export async function callJsonApi(
  label: string,
  request: JsonRequest,
  settings: ModelSettings,
  parse: ParseAnswer,
  signal?: AbortSignal,
  retry: Partial<RetryPolicy> = {},
): Promise<ProviderResult> {
  const policy: RetryPolicy = { attempts: settings.attempts, retryAfterCapMs: settings.retryAfterCapMs, ...retry };
  const result = await withRetries(() => attemptOnce(label, request, settings, parse, signal), policy, signal);
  if (!result.ok) return { ok: false, outage: labelled(label, result.outage), ...(result.oversize ? { oversize: true } : {}) };
  const { text, usage } = result.value;
  if (Buffer.byteLength(text, 'utf8') > settings.maxAnswerBytes)
    return { ok: false, outage: `${label}: answer over ${settings.maxAnswerBytes} bytes`, oversize: true };
  // An empty answer is "no answer" (SPEC §5.5: untouched, retried next run), never an invalid one.
  if (!text.trim()) return { ok: false, outage: `${label}: answered nothing` };
  return { ok: true, text, usage };
}

/** Read an API key named by `variable` from the pipeline's environment; undefined when unset or empty. */
export function resolveApiKey(settings: ModelSettings, variable: string): string | undefined {
  const value = settings.env[variable];
  return value && value.trim() ? value.trim() : undefined;
}
