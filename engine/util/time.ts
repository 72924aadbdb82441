/** The clock is injected so core code stays pure and tests are deterministic. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** RFC 3339 UTC, second precision, ending in `Z` (SPEC §4). */
export function formatTimestamp(date: Date): string {
  const second = Math.floor(date.getTime() / 1000);
  // A batch stamps many rows within one second: that second's text is made once.
  if (second === last.second) return last.text;
  const text = date.toISOString().replace(/\.\d{3}Z$/, 'Z');
  last = { second, text };
  return text;
}
let last = { second: Number.NaN, text: '' };

/** Seconds from `30`, `"30s"`, `"500ms"` or `"2m"`. */
export function parseDuration(value: number | string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number') return value;
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m)$/.exec(value);
  if (!match) return fallback;
  const amount = Number(match[1]);
  return match[2] === 'ms' ? amount / 1000 : match[2] === 'm' ? amount * 60 : amount;
}
