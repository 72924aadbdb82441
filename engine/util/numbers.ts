/** Numbers as a person reads them. Pure. */

/** Significant digits shown in text: enough for any score, few enough to hide float noise. */
const DIGITS = 12;

/** A number without float noise (`0.8200000000000001` → `0.82`); integers and non-finite numbers as they are. */
export function tidyNumber(value: number): number {
  return Number.isFinite(value) && !Number.isInteger(value) ? Number(value.toPrecision(DIGITS)) : value;
}

/** A copy of a JSON value with every number tidied, for text output (`--json` keeps the exact numbers). */
export function tidyNumbers(value: unknown): unknown {
  if (typeof value === 'number') return tidyNumber(value);
  if (Array.isArray(value)) return value.map(tidyNumbers);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, tidyNumbers(child)]));
  return value;
}
