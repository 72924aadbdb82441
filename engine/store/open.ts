/** The file store a pipeline uses: its ledgers, its key field, and the promotion stamps indexed. */
import type { Pipeline } from '../config/load.js';
import { FileStore } from './file-store.js';

export function openFileStore(pipeline: Pipeline, dir: string): FileStore {
  const marks = pipeline.stages.flatMap((stage) => (stage.kind === 'promote' ? [stage.stamp] : []));
  return new FileStore({ dir, ledgers: pipeline.ledgers, marks });
}
