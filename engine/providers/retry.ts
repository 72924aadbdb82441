/**
 * Retries for model calls: transient failures (429, 5xx, timeouts, connection errors) are tried
 * again with exponential backoff and full jitter, honouring `Retry-After` up to a cap. A permanent
 * failure, or the last attempt, ends as an outage — which the stages treat as "no answer".
 *
 * Hand-written rather than p-retry: p-retry's delays come from its own backoff formula and it
 * has no way to wait for the server's Retry-After instead.
 */
export type CallAttempt<T> = { ok: true; value: T } | { ok: false; transient: boolean; reason: string; retryAfterMs?: number; oversize?: boolean };

export interface RetryPolicy {
  attempts: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** The longest Retry-After honoured; longer ones are cut to this. */
  retryAfterCapMs?: number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Seconds or an HTTP date, as milliseconds from now; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  // An HTTP date (RFC 9110 IMF-fixdate, e.g. "Wed, 21 Oct 2015 07:28:00 GMT"); anything else is ignored.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function backoffDelay(attempt: number, policy: RetryPolicy): number {
  const base = policy.baseDelayMs ?? 500;
  const max = policy.maxDelayMs ?? 30_000;
  const ceiling = Math.min(max, base * 2 ** (attempt - 1));
  return Math.round((policy.random ?? Math.random)() * ceiling);
}

export async function withRetries<T>(
  run: (attempt: number) => Promise<CallAttempt<T>>,
  policy: RetryPolicy,
  signal?: AbortSignal,
): Promise<{ ok: true; value: T } | { ok: false; outage: string; oversize?: boolean }> {
  const sleep = policy.sleep ?? abortableSleep;
  let last = 'no attempt was made';
  for (let attempt = 1; attempt <= Math.max(1, policy.attempts); attempt++) {
    if (signal?.aborted) return { ok: false, outage: 'interrupted' };
    const result = await run(attempt);
    if (result.ok) return result;
    last = result.reason;
    if (!result.transient) return { ok: false, outage: result.reason, ...(result.oversize ? { oversize: true } : {}) };
    if (attempt === policy.attempts) break;
    const wait = result.retryAfterMs !== undefined ? Math.min(result.retryAfterMs, policy.retryAfterCapMs ?? 60_000) : backoffDelay(attempt, policy);
    try {
      await sleep(wait, signal);
    } catch {
      return { ok: false, outage: 'interrupted' };
    }
  }
  return { ok: false, outage: `${last} (gave up after ${policy.attempts} attempt${policy.attempts === 1 ? '' : 's'})` };
}
