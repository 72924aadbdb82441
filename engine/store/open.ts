/** Open the store a pipeline uses: its ledgers, its key field, and the promotion stamps indexed. */
import { statSync } from 'node:fs';
import type { Pipeline } from '../config/load.js';
import { PipelineError } from '../errors.js';
import { describeFileStoreFailure, describePostgresFailure, withPlainFailures } from './failures.js';
import { FileStore } from './file-store.js';
import { isPostgresUrl, parsePostgresUrl, PostgresStore } from './postgres-store.js';
import type { Store, StoreLayout } from './types.js';

export function storeLayout(pipeline: Pipeline): StoreLayout {
  const marks = pipeline.stages.flatMap((stage) => (stage.kind === 'promote' ? [stage.stamp] : []));
  const keyLedgers = [...new Set(pipeline.stages.flatMap((stage) => (stage.kind === 'transform' ? [stage.declines.ledger] : [])))];
  return { ledgers: pipeline.ledgers, marks, key: { field: pipeline.def.proposal.key, ledgers: keyLedgers } };
}

/** The file store in `dir`; an owner on another host holds its claims and locks for the pipeline's `claim_ttl`. */
export function openFileStore(pipeline: Pipeline, dir: string): FileStore {
  return new FileStore({ dir, ...storeLayout(pipeline), leaseMs: pipeline.defaults.claimTtl * 1000 });
}

/**
 * The store at `location` (a PostgreSQL URL, or a directory) for a command: a path that cannot be
 * a store directory is refused here, and what the store cannot do later (a read-only disk, a
 * symbolic link where a ledger belongs, a server that does not answer) fails with a message naming
 * the store, never as an internal error.
 */
export function openStore(pipeline: Pipeline, location: string): Store {
  if (isPostgresUrl(location)) {
    const target = parsePostgresUrl(location);
    return withPlainFailures(new PostgresStore(target, storeLayout(pipeline)), (error) => describePostgresFailure(error, target.display));
  }
  checkStoreDir(location);
  return withPlainFailures(openFileStore(pipeline, location), (error) => describeFileStoreFailure(error, location));
}

/** A store directory may be missing (it is made on the first write), never anything but a directory. */
function checkStoreDir(dir: string): void {
  const hint = 'name a directory (or a path where one can be made) with --store or PIPELINE_STORE';
  let found;
  try {
    found = statSync(dir, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') return; // unreadable here: the store's own reads will say so
    throw new PipelineError('store.not_directory', `${dir} cannot be a store directory: a part of its path is a file`, { hint });
  }
  if (found && !found.isDirectory())
    throw new PipelineError('store.not_directory', `${dir} is ${found.isFile() ? 'a file' : 'not a directory'}, not a store directory`, { hint });
}
