/**
 * One provider call as the stages need it: through the answer cache (model kinds only, keyed by
 * provider, model and prompt), size-capped, and parsed leniently into a JSON value. The caller
 * validates the value and only then `keep()`s it in the cache — an answer that failed validation
 * is never cached, so a re-run after a crash pays for nothing twice and repeats no bad answer.
 * Without the cache (`--no-cache`) nothing is read from it or written to it.
 */
import { normalizeUsage, type Usage } from '../jury/verdict.js';
import type { AnswerCache } from '../store/types.js';
import { extractJson } from './extract-json.js';
import { DEFAULT_MAX_ANSWER_BYTES, type Provider, type ProviderRequest } from './types.js';

export type Called =
  | { ok: true; value: unknown; usage: Usage; cached: boolean; keep(): Promise<void> }
  /** outage: no answer at all (retry later); invalid: an answer that is not usable JSON. */
  | { ok: false; kind: 'outage' | 'invalid'; reason: string };

export interface CallOptions {
  useCache: boolean;
  /** Ask, not the cache (the kept answer was no use); a valid answer is still kept, in its place. */
  fresh?: boolean;
  maxAnswerBytes?: number | undefined;
  /** Which seat of a panel asks: two seats of one judge type must not share an answer. */
  seat?: string;
}

export function cacheKey(provider: Provider, prompt: string, seat = '', env: Readonly<Record<string, string>> = {}): string {
  const key: unknown[] = [provider.kind, provider.name, provider.model ?? '', prompt, seat];
  // (A provider with no source keeps the key it had before sources were part of it.)
  if (provider.source !== undefined) key.push(provider.source);
  if (provider.readsEnv) key.push(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify(key);
}

interface CachedAnswer {
  text: string;
  usage: Usage;
}

function isCachedAnswer(value: unknown): value is CachedAnswer {
  return !!value && typeof value === 'object' && typeof (value as CachedAnswer).text === 'string';
}

function parse(text: string, maxBytes: number): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (Buffer.byteLength(text, 'utf8') > maxBytes) return { ok: false, reason: `the answer is larger than ${maxBytes} bytes` };
  // The answer cap bounds the scan: chars never outnumber bytes, so a capped answer is scanned whole.
  const extracted = extractJson(text, maxBytes);
  return extracted.ok ? extracted : { ok: false, reason: `the answer is not JSON (${extracted.reason})` };
}

export async function callProvider(cache: AnswerCache, provider: Provider, request: ProviderRequest, options: CallOptions): Promise<Called> {
  const maxBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const noop = async () => {};
  if (provider.deterministic) {
    const result = await provider.call(request);
    if (!result.ok) return { ok: false, kind: 'outage', reason: result.outage };
    if (result.text === undefined) return { ok: true, value: result.value, usage: result.usage, cached: false, keep: noop };
    const parsed = parse(result.text, maxBytes);
    return parsed.ok
      ? { ok: true, value: parsed.value, usage: result.usage, cached: false, keep: noop }
      : { ok: false, kind: 'invalid', reason: parsed.reason };
  }
  const key = cacheKey(provider, request.prompt, options.seat, request.env);
  if (options.useCache && !options.fresh) {
    // An entry holds the answer JSON-escaped (at most 6 bytes per byte) and its usage.
    // (A cache that fails is a miss: it is never required for correctness.)
    const hit = await cache.get(key, 6 * maxBytes + 64 * 1024).catch(() => undefined);
    if (isCachedAnswer(hit)) {
      const parsed = parse(hit.text, maxBytes);
      // The cache is a file of the store like any other: its usage is read as an answer's is.
      if (parsed.ok) return { ok: true, value: parsed.value, usage: normalizeUsage(hit.usage), cached: true, keep: noop };
    }
  }
  const result = await provider.call(request);
  if (!result.ok) return { ok: false, kind: result.oversize ? 'invalid' : 'outage', reason: result.outage };
  const text = result.text ?? (result.value === undefined ? '' : JSON.stringify(result.value));
  if (text.trim() === '') return { ok: false, kind: 'outage', reason: `${provider.kind} provider "${provider.name}" answered nothing` };
  const parsed = parse(text, maxBytes);
  if (!parsed.ok) return { ok: false, kind: 'invalid', reason: parsed.reason };
  // A cache that cannot be written costs a re-run one more call; it never fails the work itself.
  const keep = options.useCache ? () => cache.put(key, { text, usage: result.usage } satisfies CachedAnswer).catch(() => undefined) : noop;
  return { ok: true, value: parsed.value, usage: result.usage, cached: false, keep };
}
