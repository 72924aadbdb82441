/**
 * A valid configuration is cached as JSON, keyed by the text of every file it was read from, the
 * environment variables those files interpolate and the engine build, so a command on an
 * unchanged configuration starts without parsing YAML or compiling schemas. Any change to any of
 * those inputs misses the cache and runs the full validation. Never required for correctness.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.js';
import type { Env } from './interpolate.js';
import type { ValidConfig } from './load.js';
import type { PrebuiltSchemas } from './prebuilt.js';
import { readNamedFile } from '../util/named-file.js';
import { PIPELINE_FILE } from './locate.js';
import { readConfigFile } from './config-file.js';

interface Entry {
  /** Every file the configuration was read from (relative path → sha256). */
  files: Record<string, string>;
  /** Every variable those files interpolate (→ value, or null when unset). */
  env: Record<string, string | null>;
  /** Key variables the configuration needs set (→ whether they were): only that, never a key. */
  keys?: Record<string, boolean>;
  config: ValidConfig;
  /** Every schema of the configuration compiled to standalone code (engine/config/prebuilt.ts). */
  prebuilt?: PrebuiltSchemas;
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)/g;

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function configCacheDir(env: Env): string | undefined {
  if (env['PIPELINE_CONFIG_CACHE'] === 'off') return undefined;
  // Only a directory of the user's own: a shared one (the system temp directory) could be
  // filled by another user with a configuration this one would then trust.
  const base = env['PIPELINE_CONFIG_CACHE'] || env['XDG_CACHE_HOME'] || (env['HOME'] ? path.join(env['HOME'], '.cache') : undefined);
  return base === undefined ? undefined : path.join(base, 'pipeline', 'config');
}

function variables(text: string): string[] {
  return [...new Set([...text.matchAll(VARIABLE)].map((match) => match[1]!))];
}

function readText(dir: string, relative: string): string | undefined {
  const text = readConfigFile(path.resolve(dir, relative));
  return typeof text === 'string' ? text : undefined;
}

/** Far beyond an entry (the shipped pipeline's is ~190 KB, its prebuilt validators included). */
const ENTRY_MAX_BYTES = 64 * 1024 * 1024;

function entryFile(cacheDir: string, dir: string, mainText: string, env: Env, buildId: string): string {
  const key = sha(JSON.stringify([buildId, path.resolve(dir), mainText, variables(mainText).map((name) => [name, env[name] ?? null])]));
  return path.join(cacheDir, `${key}.json`);
}

/** Whether a key variable is set (to something other than blanks). */
export function isSet(env: Env, name: string): boolean {
  const value = Object.hasOwn(env, name) ? env[name] : undefined;
  return value !== undefined && value.trim() !== '';
}

/** What a configuration was read from: each file's digest, the variables they use, the keys set. */
export type ConfigInputs = Omit<Entry, 'config' | 'prebuilt'>;

/** The inputs of `config` as they are now, or undefined when one of its files cannot be read. */
export function configInputs(dir: string, env: Env, config: ValidConfig): ConfigInputs | undefined {
  const files: Record<string, string> = {};
  const names = new Set<string>();
  for (const relative of config.files) {
    const text = readText(dir, relative);
    if (text === undefined) return undefined;
    files[relative] = sha(text);
    for (const name of variables(text)) names.add(name);
  }
  const keys = Object.fromEntries((config.keys ?? []).map((name) => [name, isSet(env, name)]));
  return { files, env: Object.fromEntries([...names].map((name) => [name, env[name] ?? null])), keys };
}

/** Whether every input recorded is still what it was: each file's text, each variable, each key. */
export function inputsUnchanged(dir: string, env: Env, inputs: ConfigInputs): boolean {
  for (const [name, value] of Object.entries(inputs.env)) if ((env[name] ?? null) !== value) return false;
  for (const [name, set] of Object.entries(inputs.keys ?? {})) if (isSet(env, name) !== set) return false;
  for (const [relative, hash] of Object.entries(inputs.files)) {
    const text = readText(dir, relative);
    if (text === undefined || sha(text) !== hash) return false;
  }
  return true;
}

/** The cached valid configuration (and its prebuilt schemas), if every input is unchanged. */
export function readCachedConfig(dir: string, env: Env, buildId: string | undefined): { config: ValidConfig; prebuilt?: PrebuiltSchemas } | undefined {
  const cacheDir = configCacheDir(env);
  if (!cacheDir || !buildId) return undefined;
  const main = readText(dir, PIPELINE_FILE);
  if (main === undefined) return undefined;
  let entry: Entry;
  try {
    // Never waited on nor read without bound, whatever is found at its name (a FIFO, a device).
    const read = readNamedFile(entryFile(cacheDir, dir, main, env, buildId), ENTRY_MAX_BYTES);
    if (!read.ok) return undefined;
    entry = JSON.parse(read.text) as Entry;
  } catch {
    return undefined;
  }
  if (!inputsUnchanged(dir, env, entry)) return undefined;
  return entry.prebuilt ? { config: entry.config, prebuilt: entry.prebuilt } : { config: entry.config };
}

/** Remember a configuration that passed full validation. Failures only cost speed. */
export async function writeCachedConfig(dir: string, env: Env, buildId: string | undefined, config: ValidConfig, prebuilt?: PrebuiltSchemas): Promise<void> {
  const cacheDir = configCacheDir(env);
  if (!cacheDir || !buildId) return;
  const main = readText(dir, PIPELINE_FILE);
  if (main === undefined) return;
  const inputs = configInputs(dir, env, config);
  if (!inputs) return;
  const entry: Entry = { ...inputs, config, ...(prebuilt ? { prebuilt } : {}) };
  try {
    mkdirSync(cacheDir, { recursive: true });
    await writeFileAtomic(entryFile(cacheDir, dir, main, env, buildId), JSON.stringify(entry), { durable: false });
  } catch {
    // an unwritable cache directory only makes the next start slower
  }
}
