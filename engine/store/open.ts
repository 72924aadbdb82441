/** Open the store a pipeline uses: its ledgers, its key field, and the promotion stamps indexed. */
import type { Pipeline } from '../config/load.js';
import { FileStore } from './file-store.js';
import { isPostgresUrl, parsePostgresUrl, PostgresStore } from './postgres-store.js';
import type { Store, StoreLayout } from './types.js';

export function storeLayout(pipeline: Pipeline): StoreLayout {
  const marks = pipeline.stages.flatMap((stage) => (stage.kind === 'promote' ? [stage.stamp] : []));
  const keyLedgers = [...new Set(pipeline.stages.flatMap((stage) => (stage.kind === 'transform' ? [stage.declines.ledger] : [])))];
  return { ledgers: pipeline.ledgers, marks, key: { field: pipeline.def.proposal.key, ledgers: keyLedgers } };
}

export function openFileStore(pipeline: Pipeline, dir: string): FileStore {
  return new FileStore({ dir, ...storeLayout(pipeline) });
}

/** The store at `location`: a PostgreSQL URL, or a directory. */
export function openStore(pipeline: Pipeline, location: string): Store {
  if (isPostgresUrl(location)) return new PostgresStore(parsePostgresUrl(location), storeLayout(pipeline));
  return openFileStore(pipeline, location);
}
