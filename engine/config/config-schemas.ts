/**
 * The engine's own schemas for its configuration files. The build compiles them to standalone
 * code (scripts/compile-validators.js); at run time that module is used when its hash matches
 * the schema files, and the schemas are compiled on the spot otherwise (e.g. under vitest).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { packageRoot } from '../util/package-root.js';
import { createAjv, usePrebuiltMeta } from './ajv.js';

export const CONFIG_KINDS = ['pipeline', 'machine', 'stage', 'rubric'] as const;
export type ConfigKind = (typeof CONFIG_KINDS)[number];
export type ConfigValidators = Record<ConfigKind, ValidateFunction>;

let compiled: ConfigValidators | undefined;

export function configSchemaPath(kind: ConfigKind): string {
  return path.join(packageRoot(), 'schemas', 'config', `${kind}.schema.json`);
}

export function readConfigSchemaTexts(): Record<ConfigKind, string> {
  return Object.fromEntries(CONFIG_KINDS.map((kind) => [kind, readFileSync(configSchemaPath(kind), 'utf8')])) as Record<ConfigKind, string>;
}

export function hashSchemaTexts(texts: Record<ConfigKind, string>): string {
  const hash = createHash('sha256');
  for (const kind of CONFIG_KINDS) hash.update(kind).update('\0').update(texts[kind]).update('\0');
  return hash.digest('hex');
}

let buildIdCache: string | null | undefined;

/** The build's id (from the generated validators), or undefined when running from source. */
export async function engineBuildId(): Promise<string | undefined> {
  if (buildIdCache !== undefined) return buildIdCache ?? undefined;
  try {
    const generated = (await import('./build-id.generated.js')) as unknown as Record<string, unknown>;
    buildIdCache =
      generated['schemaHash'] === hashSchemaTexts(readConfigSchemaTexts()) && typeof generated['buildId'] === 'string'
        ? (generated['buildId'] as string)
        : null;
  } catch {
    buildIdCache = null;
  }
  return buildIdCache ?? undefined;
}

export async function configValidators(): Promise<ConfigValidators> {
  if (compiled) return compiled;
  const texts = readConfigSchemaTexts();
  try {
    const generated = (await import('./validators.generated.js')) as unknown as Record<string, unknown>;
    usePrebuiltMeta(generated['draft07Meta'], generated['ajvVersion']);
    if (generated['schemaHash'] === hashSchemaTexts(texts)) {
      compiled = Object.fromEntries(CONFIG_KINDS.map((kind) => [kind, generated[kind] as ValidateFunction])) as ConfigValidators;
      return compiled;
    }
  } catch {
    // not built (running from source): compile below
  }
  const ajv = createAjv();
  compiled = Object.fromEntries(CONFIG_KINDS.map((kind) => [kind, ajv.compile(JSON.parse(texts[kind]) as object)])) as ConfigValidators;
  return compiled;
}
