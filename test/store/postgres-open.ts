/** PostgreSQL stores a test file opens, each closed once the file's tests are done. */
import { afterAll } from 'vitest';
import { parsePostgresUrl, PostgresStore } from '../../engine/store/postgres-store.js';
import type { Store } from '../../engine/store/types.js';
import { LAYOUT } from './contract.js';

/** An `open(url)` for one test file (call it at the file's top level). */
export function postgresStores(): (url: string) => Store {
  const opened: Store[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((store) => store.close()));
  });
  return (url) => {
    const store = new PostgresStore(parsePostgresUrl(url), LAYOUT);
    opened.push(store);
    return store;
  };
}
