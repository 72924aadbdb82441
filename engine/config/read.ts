/** Configuration I/O: read every file pipeline.yaml names. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, parseDocument } from 'yaml';
import { interpolate, type Env } from './interpolate.js';
import { PIPELINE_FILE } from './locate.js';

/** The raw text of each configuration file, keyed by its path relative to the pipeline directory. */
export type ConfigTexts = Map<string, string | { error: string }>;

function readOne(dir: string, relative: string, texts: ConfigTexts): void {
  if (texts.has(relative)) return;
  try {
    texts.set(relative, readFileSync(path.resolve(dir, relative), 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    texts.set(relative, { error: code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'is a directory' : (error as Error).message });
  }
}

function stringsAt(doc: unknown, key: string): string[] {
  const value = (doc as Record<string, unknown> | undefined)?.[key];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  if (value && typeof value === 'object') return Object.values(value).filter((item): item is string => typeof item === 'string');
  return typeof value === 'string' ? [value] : [];
}

/**
 * Read pipeline.yaml and the machine, stage, rubric and schema files it names. Unreadable files
 * are recorded (as errors) rather than thrown, so every problem is reported in one go.
 */
export function readConfigTexts(dir: string, env: Env): ConfigTexts {
  const texts: ConfigTexts = new Map();
  readOne(dir, PIPELINE_FILE, texts);
  const main = texts.get(PIPELINE_FILE);
  if (typeof main !== 'string') return texts;
  const doc = parseDocument(main);
  if (doc.errors.length || !isMap(doc.contents)) return texts;
  let data: Record<string, unknown>;
  try {
    data = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  } catch {
    return texts; // reported, with its position, by the validation step
  }
  for (const key of ['machine', 'stages', 'rubrics', 'schemas']) {
    for (const file of stringsAt(data, key)) {
      let name: string;
      try {
        name = interpolate(file, env);
      } catch {
        continue; // reported, with its position, by the validation step
      }
      readOne(dir, path.normalize(name), texts);
    }
  }
  return texts;
}
