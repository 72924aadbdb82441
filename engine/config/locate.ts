/** Find the pipeline directory: light enough for every command's start (no YAML parser). */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PipelineError } from '../errors.js';

export const PIPELINE_FILE = 'pipeline.yaml';

/** `--dir`, else the nearest ancestor of `cwd` holding a pipeline.yaml. */
export function findPipelineDir(cwd: string, dir?: string): string {
  if (dir !== undefined) {
    const resolved = path.resolve(cwd, dir);
    if (!existsSync(path.join(resolved, PIPELINE_FILE))) {
      throw new PipelineError('config.not_found', `no ${PIPELINE_FILE} in ${resolved}`, {
        hint: 'pass the directory that holds pipeline.yaml, or run `pipeline init DIR` to create one',
      });
    }
    return resolved;
  }
  let current = path.resolve(cwd);
  for (;;) {
    if (existsSync(path.join(current, PIPELINE_FILE))) return current;
    const parent = path.dirname(current);
    if (parent === current) {
      throw new PipelineError('config.not_found', `no ${PIPELINE_FILE} in ${path.resolve(cwd)} or any directory above it`, {
        hint: 'run inside a pipeline directory, pass --dir DIR, or create one with `pipeline init DIR`',
      });
    }
    current = parent;
  }
}
