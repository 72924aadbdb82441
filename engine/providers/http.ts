/**
 * The HTTP half shared by the `openai` and `anthropic` providers: one JSON POST per attempt with a
 * timeout, a capped body read, and a classification of every failure as transient (retried) or
 * permanent — so a provider only says how to build its request and how to read its answer.
 */
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

/** Read a body up to `maxBytes`; past that, stop reading and drop the connection. */
export async function readCapped(response: Response, maxBytes: number): Promise<Capped> {
  if (!response.body) return { ok: true, text: '' };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { ok: false, over: true };
    }
    chunks.push(value);
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
}

/** A non-negative integer token count, else null: unknown is never reported as 0. */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
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
      const line = message.replace(/\s+/g, ' ').trim().slice(0, ERROR_DETAIL_CHARS * 4);
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

function connectionReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  // Library messages may quote the URL: masked like any other text that reaches an outage line.
  return maskSecrets(String(cause?.message ?? (error as Error).message ?? error)).slice(0, ERROR_DETAIL_CHARS);
}

const hasHeader = (headers: Record<string, string>, name: string) => Object.keys(headers).some((key) => key.toLowerCase() === name);

async function attemptOnce(label: string, request: JsonRequest, settings: ModelSettings, parse: ParseAnswer, signal?: AbortSignal): Promise<CallAttempt<{ text: string; usage: Usage }>> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), settings.timeoutMs);
  const combined = signal ? AbortSignal.any([timeout.signal, signal]) : timeout.signal;
  try {
    const { url, basic } = splitUserInfo(request.url);
    const headers = basic && !hasHeader(request.headers, 'authorization') ? { ...request.headers, authorization: `Basic ${basic}` } : request.headers;
    // Never follow a redirect: the key and the prompt go to the configured origin or nowhere.
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(request.body), signal: combined, redirect: 'manual' });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      const reason = `${label}: HTTP ${response.status} redirect to ${redirectTarget(response.headers.get('location'), url)}, not followed`;
      return { ok: false, transient: false, reason };
    }
    if (!response.ok) {
      const body = await readCapped(response, ERROR_BODY_BYTES);
      const reason = `${label}: HTTP ${response.status}${body.ok ? errorDetail(body.text) : ''}`;
      if (!isTransientStatus(response.status)) return { ok: false, transient: false, reason };
      return { ok: false, transient: true, reason, retryAfterMs: parseRetryAfter(response.headers.get('retry-after')) };
    }
    const body = await readCapped(response, settings.maxAnswerBytes * 2 + ENVELOPE_BYTES);
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
export async function callJsonApi(label: string, request: JsonRequest, settings: ModelSettings, parse: ParseAnswer, signal?: AbortSignal, retry: Partial<RetryPolicy> = {}): Promise<ProviderResult> {
  const policy: RetryPolicy = { attempts: settings.attempts, retryAfterCapMs: settings.retryAfterCapMs, ...retry };
  const result = await withRetries(() => attemptOnce(label, request, settings, parse, signal), policy, signal);
  if (!result.ok) return { ok: false, outage: labelled(label, result.outage), ...(result.oversize ? { oversize: true } : {}) };
  const { text, usage } = result.value;
  if (Buffer.byteLength(text, 'utf8') > settings.maxAnswerBytes) return { ok: false, outage: `${label}: answer over ${settings.maxAnswerBytes} bytes`, oversize: true };
  // An empty answer is "no answer" (SPEC §5.5: untouched, retried next run), never an invalid one.
  if (!text.trim()) return { ok: false, outage: `${label}: answered nothing` };
  return { ok: true, text, usage };
}

/** Read an API key named by `variable` from the pipeline's environment; undefined when unset or empty. */
export function resolveApiKey(settings: ModelSettings, variable: string): string | undefined {
  const value = settings.env[variable];
  return value && value.trim() ? value.trim() : undefined;
}
