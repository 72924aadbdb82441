/** The clock is injected so core code stays pure and tests are deterministic. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** RFC 3339 UTC, second precision, ending in `Z` (SPEC §4). */
export function formatTimestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
