import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** The installed package's root (where schemas/config lives), from source or from dist/. */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'schemas', 'config', 'pipeline.schema.json'))) return (cached = dir);
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the pipeline package root (schemas/config is missing)');
    dir = parent;
  }
}
