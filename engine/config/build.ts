/**
 * Build a pipeline from its files: every file validated against its schema, then the cross-file
 * rules, all issues collected before anyone decides to stop. `buildPipeline` is pure over the
 * file texts; `buildAndCache` adds the reading and the configuration cache. This is the path of
 * a configuration the cache does not hold: `loadPipeline` imports it only then, so a command on
 * an unchanged configuration never loads the YAML parser or ajv (see docs/performance.md).
 */
import path from 'node:path';
import { PipelineError, type Issue } from '../errors.js';
import { createAjv, preloadAjv } from './ajv.js';
import { configCacheDir, writeCachedConfig } from './cache.js';
import { configValidators, type ConfigValidators } from './config-schemas.js';
import { crossCheck } from './cross-check.js';
import { checkDurations } from './durations.js';
import type { Env } from './interpolate.js';
import { assemblePipeline, type NamedSchema, type Pipeline, registerInline, type Sources, type ValidConfig, withRubricDefaults } from './load.js';
import { PIPELINE_FILE } from './locate.js';
import { prebuildSchemas } from './prebuild.js';
import { readConfigTexts, takeParsed, type ConfigTexts } from './read.js';
import { SchemaRegistry } from './schema-registry.js';
import { issueAt, parseSource, type SourceFile } from './source.js';
import type { MachineDef, PipelineDef, Rubric, StageDef } from './types.js';
import { checkUsable, keyVariablesInUse, unusedProviderTolerance } from './usable.js';
import { checkYamlFile, type CheckedFile } from './validate-file.js';

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
      if (text?.line !== undefined)
        issues.push({
          code: 'config.encoding',
          severity: 'error',
          file: relative,
          line: text.line,
          col: text.col ?? 1,
          message: `cannot read schema ${relative}: ${text.error}`,
          hint: 'save the file as UTF-8',
        });
      else if (sources.pipeline)
        issues.push(issueAt(sources.pipeline, ['schemas', name], 'config.unreadable', `cannot read schema ${relative}: ${text?.error ?? 'file not found'}`));
      continue;
    }
    sources.schemas.set(name, relative);
    let schema: Record<string, unknown>;
    try {
      // A byte-order mark is no part of the JSON (editors on some systems write one; YAML files may have one too).
      schema = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as Record<string, unknown>;
    } catch (error) {
      const at = jsonPosition(text, error as Error);
      issues.push({ code: 'config.json_syntax', severity: 'error', file: relative, ...at, message: `invalid JSON: ${(error as Error).message}` });
      continue;
    }
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
      issues.push({ code: 'config.schema_invalid', severity: 'error', file: relative, line: 1, col: 1, message: 'a JSON Schema file must hold an object' });
      continue;
    }
    // JSON.parse keeps the last of a key given twice, silently: a second `"required": []` would
    // empty the first. The same text read as YAML (JSON is YAML) gives every key's position, and
    // names a key given twice.
    const positioned = parseSource(relative, text);
    const twice = positioned.issues.filter((issue) => issue.code === 'config.yaml_duplicate_key');
    if (twice.length) {
      issues.push(...twice);
      continue;
    }
    const id = typeof schema['$id'] === 'string' ? (schema['$id'] as string) : path.basename(relative);
    try {
      const withId = typeof schema['$id'] === 'string' ? schema : { ...schema, $id: id };
      registry.addNamed(name, id, withId);
      out.push({ name, id, file: relative, schema: withId });
    } catch (error) {
      issues.push(schemaProblem(registry, relative, schema, positioned.issues.length ? undefined : positioned.source, error as Error));
    }
  }
  return out;
}

/**
 * A schema that is not a valid JSON Schema, at the keyword that is wrong: the meta-schema's first
 * complaint, placed by its path in the file (line 1 when the text cannot be placed).
 */
function schemaProblem(registry: SchemaRegistry, file: string, schema: Record<string, unknown>, source: SourceFile | undefined, error: Error): Issue {
  const fallback: Issue = { code: 'config.schema_invalid', severity: 'error', file, line: 1, col: 1, message: `invalid JSON Schema: ${error.message}` };
  if (!source) return fallback;
  try {
    if (registry.ajv.validateSchema(schema) !== false) return fallback;
  } catch {
    return fallback;
  }
  const first = registry.ajv.errors?.[0];
  if (!first) return fallback;
  const at = first.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  // ajv's words, whole (every alternative it tried), at the first keyword it names.
  return issueAt(source, at, 'config.schema_invalid', fallback.message);
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
  const mainText = texts.get(PIPELINE_FILE);
  const parsed = takeParsed(texts, PIPELINE_FILE, mainText);
  const main = checkYamlFile<PipelineDef>(PIPELINE_FILE, mainText, validators.pipeline, env, {
    tolerate: unusedProviderTolerance(texts, env),
    ...(parsed ? { parsed } : {}),
  });
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

  // Validators keep their source, so the configuration cache gets them as standalone code without a second compile.
  const registry = new SchemaRegistry(createAjv({ standalone: 'cjs' }));
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

/** Read every file of the pipeline in `dir` and build it, with every check (`pipeline validate`). */
export async function buildFromDir(dir: string, env: Env): Promise<{ pipeline?: Pipeline; config?: ValidConfig; issues: Issue[] }> {
  await preloadAjv();
  return buildPipeline(dir, readConfigTexts(dir, env), env, await configValidators(), { full: true });
}

/**
 * Read, validate and build the pipeline in `dir`, and cache it (with its schemas compiled to
 * standalone code) for the next command. Throws a PipelineError listing every issue when invalid.
 */
export async function buildAndCache(dir: string, env: Env, buildId: string | undefined): Promise<{ pipeline: Pipeline; config: ValidConfig }> {
  const { pipeline, config, issues } = await buildFromDir(dir, env);
  if (!pipeline || !config) {
    const errors = issues.filter((issue) => issue.severity === 'error');
    throw new PipelineError('config.invalid', `invalid configuration (${errors.length} ${errors.length === 1 ? 'error' : 'errors'})`, { issues });
  }
  if (buildId && configCacheDir(env)) await writeCachedConfig(dir, env, buildId, config, prebuildSchemas(pipeline.schemas));
  return { pipeline, config };
}
