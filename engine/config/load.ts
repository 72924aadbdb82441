/**
 * Open a pipeline: from the configuration cache when no input changed (no YAML parsed, no schema
 * compiled, neither the YAML parser nor ajv loaded), else through `buildAndCache` (./build.js,
 * imported only then), which reads and validates every file.
 */
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import type { Issue } from '../errors.js';
import { buildLifecycle, type Lifecycle } from '../lifecycle/machine.js';
import { argsKey, checkKey } from '../util/schema-keys.js';
import { parseDuration } from '../util/time.js';
import { createAjv, preloadAjv } from './ajv.js';
import { type ConfigInputs, configInputs, inputsUnchanged, readCachedConfig } from './cache.js';
import { engineBuildId } from './config-schemas.js';
import type { Env } from './interpolate.js';
import { loadPrebuilt } from './prebuilt.js';
import { SchemaRegistry } from './schema-registry.js';
import type { SourceFile } from './source.js';
import type { Defaults, MachineDef, PipelineDef, Rubric, RubricFile, StageDef } from './types.js';

export interface Pipeline {
  dir: string;
  def: PipelineDef;
  lifecycle: Lifecycle;
  /** In pipeline order. */
  stages: StageDef[];
  rubrics: Map<string, Rubric>;
  /** Named domain schemas and every inline schema, compiled on first use. */
  schemas: SchemaRegistry;
  ledgers: Record<string, string>;
  defaults: Defaults;
  /** The store pipeline.yaml asks for — a directory or a PostgreSQL URL (before --store / PIPELINE_STORE). */
  storeDir: string;
  warnings: Issue[];
  /** Every file loaded, relative to dir. */
  files: string[];
}

export interface Sources {
  pipeline?: SourceFile;
  machine?: SourceFile;
  stages: Map<string, SourceFile>;
  rubrics: Map<string, SourceFile>;
  schemas: Map<string, string>;
}

export const DEFAULT_CONCURRENCY = 8;

/** A rubric as validated, with the defaults SPEC §2 gives (min_criterion_coverage 0.6). */
export function withRubricDefaults(file: RubricFile): Rubric {
  return { ...file, min_criterion_coverage: file.min_criterion_coverage ?? 0.6 };
}

/** Register the schemas declared inline in YAML, with their places for positioned errors. */
export function registerInline(registry: SchemaRegistry, def: PipelineDef, machine: MachineDef, stages: StageDef[], sources?: Sources): void {
  for (const [name, guard] of Object.entries(machine.guards ?? {})) {
    registry.addInline(`guard:${name}`, guard.schema, sources?.machine ? { source: sources.machine, path: ['guards', name, 'schema'] } : undefined);
  }
  for (const stage of stages) {
    if (stage.kind !== 'review') continue;
    const source = sources?.stages.get(stage.name);
    for (const [command, spec] of Object.entries(stage.commands)) {
      const schema = { type: 'object', properties: spec.args ?? {}, required: spec.required ?? [], additionalProperties: false };
      registry.addInline(argsKey(stage.name, command), schema, source ? { source, path: ['commands', command, 'args'] } : undefined);
    }
  }
  for (const [name, provider] of Object.entries(def.providers ?? {})) {
    if (provider.kind !== 'checks') continue;
    for (const [criterion, checks] of Object.entries((provider['criteria'] as Record<string, { schema?: object }[]>) ?? {})) {
      checks.forEach((check, index) => {
        if (check && typeof check === 'object' && check.schema !== undefined) {
          const place = sources?.pipeline ? { source: sources.pipeline, path: ['providers', name, 'criteria', criterion, String(index), 'schema'] } : undefined;
          registry.addInline(checkKey(name, criterion, index), check.schema, place);
        }
      });
    }
  }
}

export interface NamedSchema {
  name: string;
  id: string;
  file: string;
  schema: object;
}

/** A configuration that passed every check: plain data, cacheable as JSON. */
export interface ValidConfig {
  def: PipelineDef;
  machine: MachineDef;
  stages: StageDef[];
  rubrics: Rubric[];
  schemas: NamedSchema[];
  warnings: Issue[];
  files: string[];
  /** Key variables the stages' providers read: valid only while they are set (the cache checks them). */
  keys?: string[];
}

/** Build the runtime pipeline from a valid configuration. */
export function assemblePipeline(dir: string, config: ValidConfig, registry?: SchemaRegistry): Pipeline {
  // From the cache: ajv is created only if a schema has to be compiled (none, with prebuilt code).
  const schemas = registry ?? new SchemaRegistry(() => createAjv({ validateSchema: false }));
  if (!registry) {
    for (const named of config.schemas) schemas.addNamed(named.name, named.id, named.schema);
    registerInline(schemas, config.def, config.machine, config.stages);
  }
  const { def } = config;
  return {
    dir,
    def,
    lifecycle: buildLifecycle(config.machine, (name) => schemas.inline(`guard:${name}`)),
    stages: config.stages,
    rubrics: new Map(config.rubrics.map((rubric) => [rubric.id, rubric])),
    schemas,
    ledgers: def.ledgers ?? {},
    defaults: {
      concurrency: def.defaults?.concurrency ?? DEFAULT_CONCURRENCY,
      timeout: parseDuration(def.defaults?.timeout, 60),
      attempts: def.defaults?.attempts ?? 3,
      claimTtl: parseDuration(def.defaults?.claim_ttl, 300),
    },
    // A directory relative to pipeline.yaml, or a PostgreSQL URL as it is.
    storeDir: /^postgres(ql)?:\/\//i.test(def.store ?? '') ? def.store! : path.resolve(dir, def.store ?? '.pipeline'),
    warnings: config.warnings,
    files: config.files,
  };
}

/**
 * In one process, the pipeline last opened from each directory, with what it was read from: a
 * second command in the same process (`main` called again, as the tests and `viz --serve` do)
 * reuses it — machine, compiled schemas and all — while every input file, variable and key is
 * unchanged. Compared the way the cache on disk compares (file digests), never by timestamps.
 */
const opened = new Map<string, { inputs: ConfigInputs; pipeline: Pipeline }>();

/**
 * Open the pipeline in `dir`: from the validation cache when no input changed, else read, validate
 * everything and cache the result. Throws a PipelineError listing every issue when invalid.
 */
export async function loadPipeline(dir: string, env: Env = process.env, options: { useCache?: boolean } = {}): Promise<Pipeline> {
  const useCache = options.useCache ?? true;
  const key = path.resolve(dir);
  const previous = opened.get(key);
  if (useCache && previous && inputsUnchanged(dir, env, previous.inputs)) return previous.pipeline;
  const { pipeline, config } = await openPipeline(dir, env, useCache);
  const inputs = configInputs(dir, env, config);
  if (inputs) opened.set(key, { inputs, pipeline });
  else opened.delete(key);
  return pipeline;
}

async function openPipeline(dir: string, env: Env, useCache: boolean): Promise<{ pipeline: Pipeline; config: ValidConfig }> {
  const buildId = await engineBuildId();
  if (useCache) {
    const cached = readCachedConfig(dir, env, buildId);
    if (cached) {
      const pipeline = assemblePipeline(dir, cached.config);
      const prebuilt = cached.prebuilt;
      if (prebuilt) pipeline.schemas.usePrebuilt((key) => usablePrebuilt(prebuilt[key]));
      else await preloadAjv(); // its schemas are compiled as they are used
      return { pipeline, config: cached.config };
    }
  }
  const { buildAndCache } = await import('./build.js');
  return buildAndCache(dir, env, buildId);
}

/** A prebuilt validator, or undefined (compile it) when there is none or it does not load. */
function usablePrebuilt(code: string | undefined): ValidateFunction | undefined {
  if (code === undefined) return undefined;
  try {
    return loadPrebuilt(code);
  } catch {
    return undefined;
  }
}
