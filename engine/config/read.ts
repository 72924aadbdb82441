/** Configuration I/O: read every file pipeline.yaml names. */
import path from 'node:path';
import { isMap } from 'yaml';
import type { Issue } from '../errors.js';
import { interpolate, type Env } from './interpolate.js';
import { readConfigFile, type Unreadable } from './config-file.js';
import { PIPELINE_FILE } from './locate.js';
import { parseSource, type SourceFile } from './source.js';

/**
 * The raw text of each configuration file, keyed by its path relative to the pipeline directory;
 * for one that cannot be read, why (and where in it, for a byte that is not UTF-8).
 */
export type ConfigTexts = Map<string, string | Unreadable>;

/** pipeline.yaml as `readConfigTexts` parsed it, for the validation step to take once (`takeParsed`). */
const parsedFiles = new WeakMap<ConfigTexts, { source: SourceFile; issues: Issue[] }>();

/** The parse of `file` that reading `texts` made of `text`, once; undefined when there is none (then parse it). */
export function takeParsed(texts: ConfigTexts, file: string, text: unknown): { source: SourceFile; issues: Issue[] } | undefined {
  const parsed = parsedFiles.get(texts);
  if (!parsed || parsed.source.file !== file || parsed.source.text !== text) return undefined;
  parsedFiles.delete(texts);
  return parsed;
}

function readOne(dir: string, relative: string, texts: ConfigTexts): void {
  if (texts.has(relative)) return;
  texts.set(relative, readConfigFile(path.resolve(dir, relative)));
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
  // Parsed once, with positions: the validation step takes this parse rather than making another.
  const parsed = parseSource(PIPELINE_FILE, main);
  parsedFiles.set(texts, parsed);
  // Not a map, or not YAML: reported, with its position, by the validation step.
  if (parsed.issues.length || !isMap(parsed.source.doc.contents)) return texts;
  const data = parsed.source.data as Record<string, unknown>;
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
