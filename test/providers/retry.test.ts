import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter, withRetries, type CallAttempt, type RetryPolicy } from '../../engine/providers/retry.js';

/** A scripted run: returns the attempts in order and counts the calls. */
function script<T>(...attempts: CallAttempt<T>[]) {
  const calls: number[] = [];
  const run = async (attempt: number) => {
    calls.push(attempt);
    return attempts[Math.min(calls.length, attempts.length) - 1]!;
  };
  return { run, calls };
}

/** A policy that records waits instead of sleeping. */
function recording(policy: Partial<RetryPolicy> = {}): { policy: RetryPolicy; waits: number[] } {
  const waits: number[] = [];
  return { policy: { attempts: 3, random: () => 1, sleep: async (ms) => void waits.push(ms), ...policy }, waits };
}

const transient = (reason = 'HTTP 500', retryAfterMs?: number): CallAttempt<string> => ({
  ok: false,
  transient: true,
  reason,
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
});

describe('backoffDelay', () => {
  it('doubles the ceiling with each attempt up to maxDelayMs', () => {
    const policy: RetryPolicy = { attempts: 10, baseDelayMs: 100, maxDelayMs: 1000, random: () => 1 };
    expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, policy))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('draws a full jitter between 0 and the ceiling from the injected random', () => {
    const at = (random: number) => backoffDelay(3, { attempts: 5, baseDelayMs: 100, random: () => random });
    expect(at(0)).toBe(0);
    expect(at(0.25)).toBe(100);
    expect(at(0.999)).toBe(400);
    for (let i = 0; i < 50; i++) {
      const delay = backoffDelay(4, { attempts: 5, baseDelayMs: 100 });
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(800);
    }
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-01T12:00:00Z');

  it('reads seconds, whole or fractional', () => {
    expect(parseRetryAfter('5', now)).toBe(5000);
    expect(parseRetryAfter(' 1.5 ', now)).toBe(1500);
    expect(parseRetryAfter('0', now)).toBe(0);
  });

  it('reads an HTTP date as the time left until it, and a past date as no wait', () => {
    expect(parseRetryAfter('Sun, 01 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Nov 2026 11:59:00 GMT', now)).toBe(0);
  });

  it('ignores an absent or unreadable header', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

describe('withRetries', () => {
  it('returns the first success without waiting', async () => {
    const { run, calls } = script<string>({ ok: true, value: 'answer' });
    const { policy, waits } = recording();
    expect(await withRetries(run, policy)).toEqual({ ok: true, value: 'answer' });
    expect(calls).toEqual([1]);
    expect(waits).toEqual([]);
  });

  it('retries transient failures with growing backoff until one succeeds', async () => {
    const { run, calls } = script<string>(transient(), transient(), { ok: true, value: 'late' });
    const { policy, waits } = recording({ baseDelayMs: 100 });
    expect(await withRetries(run, policy)).toEqual({ ok: true, value: 'late' });
    expect(calls).toEqual([1, 2, 3]);
    expect(waits).toEqual([100, 200]);
  });

  it('gives up after the attempts, naming the last failure and the count', async () => {
    const { run, calls } = script<string>(transient('HTTP 502'), transient('HTTP 503'));
    const { policy, waits } = recording({ attempts: 3 });
    expect(await withRetries(run, policy)).toEqual({ ok: false, outage: 'HTTP 503 (gave up after 3 attempts)' });
    expect(calls).toEqual([1, 2, 3]);
    expect(waits).toHaveLength(2);
  });

  it('does not retry a permanent failure', async () => {
    const { run, calls } = script<string>({ ok: false, transient: false, reason: 'HTTP 401' });
    const { policy, waits } = recording();
    expect(await withRetries(run, policy)).toEqual({ ok: false, outage: 'HTTP 401' });
    expect(calls).toEqual([1]);
    expect(waits).toEqual([]);
  });

  it('waits for Retry-After instead of the backoff, cut to the cap', async () => {
    const { run } = script<string>(transient('HTTP 429', 700), transient('HTTP 429', 90_000), { ok: true, value: 'ok' });
    const { policy, waits } = recording({ baseDelayMs: 5, retryAfterCapMs: 2000 });
    await withRetries(run, policy);
    expect(waits).toEqual([700, 2000]);
  });

  it('stops with "interrupted" when aborted before an attempt or during a wait', async () => {
    const before = script<string>(transient());
    expect(await withRetries(before.run, recording().policy, AbortSignal.abort())).toEqual({ ok: false, outage: 'interrupted' });
    expect(before.calls).toEqual([]);

    const controller = new AbortController();
    const during = script<string>(transient());
    const result = withRetries(during.run, { attempts: 3, baseDelayMs: 60_000, random: () => 1 }, controller.signal);
    setTimeout(() => controller.abort(), 20);
    expect(await result).toEqual({ ok: false, outage: 'interrupted' });
    expect(during.calls).toEqual([1]);
  });
});
