/**
 * Load a pipeline: every file validated against its schema, then the cross-file rules, all
 * issues collected before anyone decides to stop. `buildPipeline` is pure over the file texts;
 * `loadPipeline` adds the reading.
 */
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { PipelineError, type Issue } from '../errors.js';
import { buildLifecycle, type Lifecycle } from '../lifecycle/machine.js';
import { argsKey, checkKey } from '../util/schema-keys.js';
import { parseDuration } from '../util/time.js';
import { createAjv } from './ajv.js';
import { type ConfigInputs, configCacheDir, configInputs, inputsUnchanged, readCachedConfig, writeCachedConfig } from './cache.js';
import { loadPrebuilt, prebuildSchemas } from './prebuilt.js';
import { configValidators, engineBuildId, type ConfigValidators } from './config-schemas.js';
import { crossCheck } from './cross-check.js';
import { checkDurations } from './durations.js';
import { checkUsable, keyVariablesInUse, unusedProviderTolerance } from './usable.js';
import type { Env } from './interpolate.js';
import { PIPELINE_FILE, readConfigTexts, type ConfigTexts } from './read.js';
import { issueAt, type SourceFile } from './source.js';
import { SchemaRegistry } from './schema-registry.js';
import type { Defaults, MachineDef, PipelineDef, Rubric, RubricFile, StageDef } from './types.js';
import { checkYamlFile, type CheckedFile } from './validate-file.js';

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

function stageName(file: string, def: { name?: string }): string {
  return def.name ?? path.basename(file).replace(/\.ya?ml$/, '');
}

function jsonPosition(text: string, error: Error): { line: number; col: number } {
  const match = /position (\d+)/.exec(error.message);
  if (!match) return { line: 1, col: 1 };
  const before = text.slice(0, Number(match[1]));
  const lines = before.split('\n');
  return { line: lines.length, col: lines[lines.length - 1]!.length + 1 };
}

/** Register the named domain schemas; each may `$ref` another by its $id (default: its file name). */
function registerSchemas(registry: SchemaRegistry, def: PipelineDef, texts: ConfigTexts, issues: Issue[], sources: Sources): NamedSchema[] {
  const out: NamedSchema[] = [];
  for (const [name, file] of Object.entries(def.schemas ?? {})) {
    const relative = path.normalize(file);
    const text = texts.get(relative);
    if (typeof text !== 'string') {
      if (sources.pipeline)
        issues.push(issueAt(sources.pipeline, ['schemas', name], 'config.unreadable', `cannot read schema ${relative}: ${text?.error ?? 'file not found'}`));
      continue;
    }
    sources.schemas.set(name, relative);
    let schema: Record<string, unknown>;
    try {
      schema = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      const at = jsonPosition(text, error as Error);
      issues.push({ code: 'config.json_syntax', severity: 'error', file: relative, ...at, message: `invalid JSON: ${(error as Error).message}` });
      continue;
    }
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
      issues.push({ code: 'config.schema_invalid', severity: 'error', file: relative, line: 1, col: 1, message: 'a JSON Schema file must hold an object' });
      continue;
    }
    const id = typeof schema['$id'] === 'string' ? (schema['$id'] as string) : path.basename(relative);
    try {
      const withId = typeof schema['$id'] === 'string' ? schema : { ...schema, $id: id };
      registry.addNamed(name, id, withId);
      out.push({ name, id, file: relative, schema: withId });
    } catch (error) {
      issues.push({
        code: 'config.schema_invalid',
        severity: 'error',
        file: relative,
        line: 1,
        col: 1,
        message: `invalid JSON Schema: ${(error as Error).message}`,
      });
    }
  }
  return out;
}

/** Register the schemas declared inline in YAML, with their places for positioned errors. */
function registerInline(registry: SchemaRegistry, def: PipelineDef, machine: MachineDef, stages: StageDef[], sources?: Sources): void {
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

export interface BuildOptions {
  /** Compile every schema now, reporting broken ones (validate, and first loads). Default true. */
  full?: boolean;
}

export function buildPipeline(
  dir: string,
  texts: ConfigTexts,
  env: Env,
  validators: ConfigValidators,
  options: BuildOptions = {},
): { pipeline?: Pipeline; config?: ValidConfig; issues: Issue[] } {
  const issues: Issue[] = [];
  const sources: Sources = { stages: new Map(), rubrics: new Map(), schemas: new Map() };

  const warnings: Issue[] = [];
  const main = checkYamlFile<PipelineDef>(PIPELINE_FILE, texts.get(PIPELINE_FILE), validators.pipeline, env, { tolerate: unusedProviderTolerance(texts, env) });
  for (const issue of main.issues) (issue.severity === 'warning' ? warnings : issues).push(issue);
  if (main.source) sources.pipeline = main.source;
  const def = main.data;
  if (main.source) issues.push(...checkDurations(def, main.source));
  if (!def || typeof def.machine !== 'string') return { issues: [...issues, ...warnings] };

  const machineFile = path.normalize(def.machine);
  const machine = checkYamlFile<MachineDef>(machineFile, texts.get(machineFile), validators.machine, env);
  issues.push(...relocateUnreadable(machine, main.source, ['machine']));
  if (machine.source) sources.machine = machine.source;

  const stages: StageDef[] = [];
  (def.stages ?? []).forEach((file, index) => {
    const relative = path.normalize(file);
    const checked = checkYamlFile<StageDef>(relative, texts.get(relative), validators.stage, env);
    issues.push(...relocateUnreadable(checked, main.source, ['stages', String(index)]));
    if (checked.source && checked.data) {
      const stage = { ...checked.data, name: stageName(relative, checked.data), file: relative } as StageDef;
      sources.stages.set(stage.name, checked.source);
      stages.push(stage);
    }
  });

  const rubrics = new Map<string, Rubric>();
  (def.rubrics ?? []).forEach((file, index) => {
    const relative = path.normalize(file);
    const checked = checkYamlFile<Rubric>(relative, texts.get(relative), validators.rubric, env);
    issues.push(...relocateUnreadable(checked, main.source, ['rubrics', String(index)]));
    if (checked.source && checked.data && typeof checked.data.id === 'string') {
      if (rubrics.has(checked.data.id)) {
        issues.push(
          issueAt(
            checked.source,
            ['id'],
            'config.duplicate_rubric',
            `rubric id "${checked.data.id}" is already used by ${sources.rubrics.get(checked.data.id)?.file ?? 'another rubric'}`,
          ),
        );
      } else {
        rubrics.set(checked.data.id, withRubricDefaults(checked.data));
        sources.rubrics.set(checked.data.id, checked.source);
      }
    }
  });

  const registry = new SchemaRegistry();
  const named = registerSchemas(registry, def, texts, issues, sources);
  const machineDef = machine.data;
  if (issues.some((issue) => issue.severity === 'error') || !machineDef) return { issues: [...issues, ...warnings] };

  const cross = crossCheck({ def, machine: machineDef, stages, rubrics, schemas: registry, sources });
  for (const issue of cross) (issue.severity === 'warning' ? warnings : issues).push(issue);
  if (issues.length) return { issues: [...issues, ...warnings] };
  // What validates but could never run: criteria no judge can score, keys that are not set.
  for (const issue of checkUsable({ def, stages, rubrics, sources, env })) (issue.severity === 'warning' ? warnings : issues).push(issue);
  if (issues.length) return { issues: [...issues, ...warnings] };

  registerInline(registry, def, machineDef, stages, sources);
  if (options.full ?? true) {
    for (const failure of registry.compileAll()) {
      const message = `invalid JSON Schema: ${failure.message}`;
      if (failure.place) issues.push(issueAt(failure.place.source, failure.place.path, 'config.schema_invalid', message));
      else
        issues.push({
          code: 'config.schema_invalid',
          severity: 'error',
          file: sources.schemas.get(failure.key.replace(/^schema:/, '')) ?? PIPELINE_FILE,
          message,
        });
    }
    if (issues.length) return { issues: [...issues, ...warnings] };
  }

  const files = [
    PIPELINE_FILE,
    machineFile,
    ...stages.map((stage) => stage.file),
    ...[...sources.rubrics.values()].map((source) => source.file),
    ...sources.schemas.values(),
  ];
  const keys = keyVariablesInUse(def, stages);
  const config: ValidConfig = { def, machine: machineDef, stages, rubrics: [...rubrics.values()], schemas: named, warnings, files, keys };
  return { pipeline: assemblePipeline(dir, config, registry), config, issues: warnings };
}

/** A file that cannot be read is blamed on the line of pipeline.yaml that names it. */
function relocateUnreadable<T>(checked: CheckedFile<T>, main: SourceFile | undefined, pathInMain: string[]): Issue[] {
  return checked.issues.map((issue) => {
    if (issue.code !== 'config.unreadable' || !main) return issue;
    return { ...issueAt(main, pathInMain, issue.code, issue.message), hint: 'paths are relative to pipeline.yaml' };
  });
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
      return { pipeline, config: cached.config };
    }
  }
  const texts = readConfigTexts(dir, env);
  const { pipeline, config, issues } = buildPipeline(dir, texts, env, await configValidators(), { full: true });
  if (!pipeline || !config) {
    const errors = issues.filter((issue) => issue.severity === 'error');
    throw new PipelineError('config.invalid', `invalid configuration (${errors.length} ${errors.length === 1 ? 'error' : 'errors'})`, { issues });
  }
  if (buildId && configCacheDir(env)) await writeCachedConfig(dir, env, buildId, config, prebuildSchemas(pipeline.schemas, config.schemas));
  return { pipeline, config };
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
