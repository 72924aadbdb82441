/**
 * The pipeline's JSON Schemas are checked against the draft-07 meta-schema with a validator the
 * build compiled (scripts/compile-validators.js), not one compiled in each process. It must be
 * ajv's own check in all but its origin: the same answer, errors and message, `$data` included;
 * schemas that reach the meta-schema themselves (a `$ref` to it) get ajv's own check; and it is
 * used only for the ajv version that built it.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { createAjv, prebuiltMetaInUse, usePrebuiltMeta } from '../../engine/config/ajv.js';
import { cli, cliStore } from '../cli/cli.js';
import { copyPipeline, ROOT } from '../helpers.js';

const DRAFT_07 = 'http://json-schema.org/draft-07/schema';
const ajvVersion = (createRequire(import.meta.url)('ajv/package.json') as { version: string }).version;
const DIST = path.join(ROOT, 'dist', 'engine', 'config');

const shipped = readdirSync(path.join(ROOT, 'schemas'))
  .filter((name) => name.endsWith('.json'))
  .map((name) => JSON.parse(readFileSync(path.join(ROOT, 'schemas', name), 'utf8')) as object);
/** Schemas that name the meta-schema themselves: ajv's own check, which compiles it as a meta-schema. */
const namingMeta: object[] = [
  { type: 'object', properties: { s: { $ref: `${DRAFT_07}#` } } },
  { $ref: `${DRAFT_07}#/definitions/nonNegativeInteger` },
  { properties: { list: { $ref: `${DRAFT_07}#/definitions/stringArray` } } },
  { properties: { s: { $ref: 'http://json-schema.org/schema' } } },
  { $ref: `${DRAFT_07}#/properties/$id` },
];
const schemas: (object | boolean)[] = [
  ...shipped,
  true,
  false,
  {},
  { type: 'strnig' },
  { type: ['string', 42] },
  { type: ['string', 'string'] },
  { properties: { a: { minimum: 'one' } } },
  { required: 'a' },
  { required: ['a', 'a'] },
  { items: [{ type: 'string' }, 1] },
  { enum: [] },
  { additionalProperties: { type: 'object', properties: { b: { maxLength: -1 } } } },
  // `$data` references are allowed where the engine's ajv allows them, and nowhere else.
  { properties: { low: { type: 'number' }, high: { type: 'number', minimum: { $data: '1/low' } } } },
  { properties: { high: { minimum: { $data: 42 } } } },
  { $schema: `${DRAFT_07}#`, type: 'object', properties: { a: { const: 1 } } },
  { $schema: DRAFT_07, type: 7 },
  { definitions: { x: { $ref: 42 } } },
  ...namingMeta,
];

function errorsOf(errors: ErrorObject[] | null | undefined): Partial<ErrorObject>[] | null {
  return errors ? errors.map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message })) : null;
}

/** ajv's own check of one schema against draft-07, with the meta-schema compiled here. */
let ownMeta: ValidateFunction | undefined;
function ajvOwn(schema: object | boolean): { valid: boolean; errors: Partial<ErrorObject>[] | null } {
  ownMeta ??= createAjv().getSchema(DRAFT_07)!;
  const meta = ownMeta;
  const valid = meta(schema) as boolean;
  return { valid, errors: errorsOf(meta.errors) };
}

/** What ajv's own check says of each of `schemas` (each in a fresh instance), computed once. */
let ownMessages: (string | undefined)[] | undefined;
function ajvOwnMessages(): (string | undefined)[] {
  ownMessages ??= schemas.map((schema) => added(schema));
  return ownMessages;
}

/** What adding and compiling a schema says: undefined when accepted, else the message. */
function added(schema: object | boolean, ajv = createAjv()): string | undefined {
  const key = `test-${Math.random()}`;
  try {
    ajv.addSchema(schema as object, key);
    ajv.getSchema(key);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

interface Built {
  inUse: boolean;
  answers: { valid: boolean; errors: Partial<ErrorObject>[] | null }[];
  messages: (string | null)[];
}

/**
 * The built modules at work, in a plain Node process (as the binary loads them; their ajv runtime
 * imports are CommonJS interop, which vitest's loader resolves otherwise): after the configuration
 * validators are loaded, the built meta validator's answers, and what the built `createAjv` says
 * of each schema added and compiled.
 */
function builtAnswers(inputs: readonly (object | boolean)[]): Built {
  const script = `
    const url = (name) => require('node:url').pathToFileURL(require('node:path').join(${JSON.stringify(DIST)}, name)).href;
    const built = await import(url('validators.generated.js'));
    const { configValidators } = await import(url('config-schemas.js'));
    const { createAjv, prebuiltMetaInUse } = await import(url('ajv.js'));
    await configValidators();
    const inputs = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
    const errorsOf = (errors) => errors ? errors.map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message })) : null;
    const answers = inputs.map((schema) => ({ valid: built.draft07Meta(schema), errors: errorsOf(built.draft07Meta.errors) }));
    const messages = inputs.map((schema, i) => {
      try { const ajv = createAjv(); ajv.addSchema(schema, 'k' + i); ajv.getSchema('k' + i); return null; } catch (error) { return error.message; }
    });
    process.stdout.write(JSON.stringify({ inUse: prebuiltMetaInUse(), answers, messages }));`;
  const child = spawnSync(process.execPath, ['-e', `(async () => {${script}})().catch((e) => { console.error(e); process.exit(1); })`], {
    input: JSON.stringify(inputs),
    encoding: 'utf8',
  });
  if (child.status !== 0) throw new Error(child.stderr);
  return JSON.parse(child.stdout) as Built;
}

/** ajv's own compiled meta-schema validator, counting its calls. */
function countedMeta(): { validate: ValidateFunction; calls: () => number } {
  const meta = createAjv().getSchema(DRAFT_07)!;
  let calls = 0;
  const validate = Object.assign(
    (schema: unknown) => {
      calls++;
      const valid = meta(schema);
      validate.errors = meta.errors;
      return valid;
    },
    { errors: null as ValidateFunction['errors'] },
  ) as unknown as ValidateFunction;
  return { validate, calls: () => calls };
}

afterEach(() => usePrebuiltMeta(undefined, undefined));

describe('the prebuilt draft-07 meta-schema validator', () => {
  it('is what the built engine checks schemas with, giving ajv’s own answers, errors and messages', () => {
    const built = builtAnswers(schemas);
    expect(built.inUse).toBe(true);
    expect(built.answers).toEqual(schemas.map(ajvOwn));
    expect(built.messages).toEqual(ajvOwnMessages().map((message) => message ?? null));
    expect(built.answers.filter((answer) => !answer.valid).length).toBeGreaterThanOrEqual(10);
  });

  it('checks the schemas ajv adds, with ajv’s message, and leaves those naming the meta-schema to ajv', () => {
    const messages = ajvOwnMessages();
    // A schema that $refs the meta-schema is one ajv accepts (compiled with its meta-schema options).
    expect(namingMeta.slice(0, 4).map((schema) => added(schema))).toEqual([undefined, undefined, undefined, undefined]);
    const meta = countedMeta();
    usePrebuiltMeta(meta.validate, ajvVersion);
    expect(prebuiltMetaInUse()).toBe(true);
    expect(schemas.map((schema) => added(schema))).toEqual(messages);
    // Every object schema but those naming the meta-schema went through it.
    expect(meta.calls()).toBe(schemas.filter((schema) => typeof schema === 'object' && !namingMeta.includes(schema)).length);
    expect(messages.filter((message) => message?.startsWith('schema is invalid: data')).length).toBeGreaterThanOrEqual(10);
  });

  it('gives one instance the same answers whatever order its schemas come in', () => {
    const order = [{ type: 'string' }, namingMeta[0]!, { type: 'strnig' }, namingMeta[1]!];
    const own = createAjv();
    const expected = order.map((schema) => added(schema, own));
    usePrebuiltMeta(countedMeta().validate, ajvVersion);
    const prebuilt = createAjv();
    expect(order.map((schema) => added(schema, prebuilt))).toEqual(expected);
    expect(expected.map((message) => message === undefined)).toEqual([true, true, false, true]);
  });

  it('is not used for another ajv version, an unknown one, nor for another $schema', () => {
    const meta = countedMeta();
    usePrebuiltMeta(meta.validate, '0.0.0');
    expect(prebuiltMetaInUse()).toBe(false);
    expect(added({ type: 'strnig' })).toMatch(/^schema is invalid: data\/type must be equal to one of the allowed values/);
    usePrebuiltMeta(meta.validate, undefined);
    expect(prebuiltMetaInUse()).toBe(false);
    expect(meta.calls()).toBe(0);
    usePrebuiltMeta(meta.validate, ajvVersion);
    expect(added({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' })).toMatch(/no schema with key or ref/);
    expect(meta.calls()).toBe(0);
  });

  it('`pipeline validate` reports a domain schema’s problem word for word, and accepts one that refers to the meta-schema', () => {
    const cases: [object, string | undefined][] = [
      [{ type: 'object', required: ['a', 'a'] }, undefined],
      [{ type: 'object', properties: { low: { type: 'number' }, high: { type: 'number', minimum: { $data: '1/low' } } } }, undefined],
      [{ type: 'object', properties: { id: { type: 'strnig' } } }, undefined],
      [namingMeta[0]!, undefined],
    ];
    for (const entry of cases) entry[1] = added(entry[0]);
    expect(cases.map(([, message]) => message === undefined)).toEqual([false, true, false, true]);
    // Two pipelines: one with the schemas ajv accepts (it validates), one with those it rejects
    // (each reported). Each schema is one more named schema beside the shipped ones.
    for (const accepted of [true, false]) {
      const chosen = cases.filter(([, message]) => (message === undefined) === accepted);
      const dir = copyPipeline();
      const main = path.join(dir, 'pipeline.yaml');
      const names = chosen.map((_, i) => `probe${i}`);
      writeFileSync(
        main,
        readFileSync(main, 'utf8').replace(/^schemas:\n/m, `schemas:\n${names.map((name) => `  ${name}: schemas/${name}.schema.json\n`).join('')}`),
      );
      chosen.forEach(([schema], i) => writeFileSync(path.join(dir, 'schemas', `${names[i]}.schema.json`), JSON.stringify(schema)));
      const result = cli(['--dir', dir, 'validate'], { env: cliStore().env });
      if (accepted) expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 });
      else {
        expect(result.code).toBe(1);
        // Word for word, at the keyword the meta-schema rejects (the file is one line of JSON here).
        chosen.forEach(([, message], i) => {
          expect(result.stderr).toMatch(new RegExp(`schemas/${names[i]}\\.schema\\.json:1:\\d+: invalid JSON Schema: `));
          expect(result.stderr).toContain(`: invalid JSON Schema: ${message}`);
        });
      }
    }
  });
});
