/**
 * PostgreSQL in tests: the URL of the throwaway server (test/pg/global-setup.ts) and a fresh schema
 * for each store, so test files never see each other's data.
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/** The server's URL, or '' when the machine has no PostgreSQL binaries (tests then skip). */
export const PG_URL: string = inject('pgUrl');

/** A store URL in a schema of its own. */
export function freshSchemaUrl(prefix = 't'): string {
  return `${PG_URL}?schema=${prefix}_${randomBytes(6).toString('hex')}`;
}
