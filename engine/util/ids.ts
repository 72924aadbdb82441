import { monotonicFactory } from 'ulid';

/** ULIDs, upper case (SPEC §4). Checked before any file system access. */
export const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

export function isUlid(value: unknown): value is string {
  return typeof value === 'string' && ULID_PATTERN.test(value);
}

/** What is not an id, quoted for a message: cut short (an argument or a key may be any size). */
export function quotedNonId(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

export type IdGenerator = () => string;

/** Monotonic within a process, so ids created in one run sort in creation order. */
export function ulidGenerator(): IdGenerator {
  const next = monotonicFactory();
  return () => next();
}
