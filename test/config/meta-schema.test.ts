/**
 * The pipeline's JSON Schemas are checked against the draft-07 meta-schema with a validator the
 * build compiled (scripts/compile-validators.js), not one compiled in each process. It must be
 * ajv's own check in all but its origin: the same answer, errors and message, `$data` included;
 * and it is used only for the ajv version that built it.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { createAjv, usePrebuiltMeta } from '../../engine/config/ajv.js';
import { cli, cliStore } from '../cli/cli.js';
import { copyPipeline, ROOT } from '../helpers.js';

const DRAFT_07 = 'http://json-schema.org/draft-07/schema';
const ajvVersion = (createRequire(import.meta.url)('ajv/package.json') as { version: string }).version;
const GENERATED = pathToFileURL(path.join(ROOT, 'dist', 'engine', 'config', 'validators.generated.js')).href;

const shipped = readdirSync(path.join(ROOT, 'schemas'))
  .filter((name) => name.endsWith('.json'))
  .map((name) => JSON.parse(readFileSync(path.join(ROOT, 'schemas', name), 'utf8')) as object);
const schemas: object[] = [
  ...shipped,
  {},
  { type: 'strnig' },
  { type: ['string', 42] },
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
];

function errorsOf(errors: ErrorObject[] | null | undefined): Partial<ErrorObject>[] {
  return (errors ?? []).map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message }));
}

/** ajv's own check, with the meta-schema compiled here. */
function ajvOwn(schema: object): { valid: boolean; errors: Partial<ErrorObject>[] } {
  const meta = createAjv().getSchema(DRAFT_07)!;
  const valid = meta(schema) as boolean;
  return { valid, errors: errorsOf(meta.errors) };
}

/**
 * The built module's answers, from a plain Node process: the module is ES code for Node's own
 * loader (its ajv runtime imports are CommonJS interop, which vitest's loader resolves otherwise).
 */
function builtAnswers(inputs: object[]): { version: string; answers: { valid: boolean; errors: Partial<ErrorObject>[] }[] } {
  const script = `
    const built = await import(${JSON.stringify(GENERATED)});
    const inputs = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
    const answers = inputs.map((schema) => {
      const valid = built.draft07Meta(schema);
      const errors = (built.draft07Meta.errors ?? []).map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message }));
      return { valid, errors };
    });
    process.stdout.write(JSON.stringify({ version: built.ajvVersion, answers }));`;
  const child = spawnSync(
    process.execPath,
    ['--input-type=commonjs', '-e', `(async () => {${script}})().catch((e) => { console.error(e); process.exit(1); })`],
    {
      input: JSON.stringify(inputs),
      encoding: 'utf8',
    },
  );
  if (child.status !== 0) throw new Error(child.stderr);
  return JSON.parse(child.stdout);
}

/** What `addSchema` says: undefined when accepted, else its message. */
function added(schema: object): string | undefined {
  try {
    createAjv().addSchema(schema, `test-${Math.random()}`);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
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
  it('gives ajv’s own answer and errors for every schema, valid and invalid, and was built by the ajv the engine loads', () => {
    const built = builtAnswers(schemas);
    expect(built.version).toBe(ajvVersion);
    expect(built.answers).toEqual(schemas.map(ajvOwn));
    expect(built.answers.filter((answer) => !answer.valid).length).toBeGreaterThanOrEqual(10);
  });

  it('checks every schema ajv adds, with ajv’s message', () => {
    const messages = schemas.map(added);
    const meta = countedMeta();
    usePrebuiltMeta(meta.validate, ajvVersion);
    expect(schemas.map(added)).toEqual(messages);
    expect(meta.calls()).toBe(schemas.length);
    expect(messages.filter(Boolean).length).toBeGreaterThanOrEqual(10);
    expect(messages.filter(Boolean).every((message) => message!.startsWith('schema is invalid: data'))).toBe(true);
  });

  it('is not used for another ajv version, nor for another $schema', () => {
    const meta = countedMeta();
    usePrebuiltMeta(meta.validate, '0.0.0');
    expect(added({ type: 'strnig' })).toMatch(/^schema is invalid: data\/type must be equal to one of the allowed values/);
    expect(meta.calls()).toBe(0);
    usePrebuiltMeta(meta.validate, ajvVersion);
    expect(added({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' })).toMatch(/no schema with key or ref/);
    expect(meta.calls()).toBe(0);
  });

  it('is what `pipeline validate` checks domain schemas with, message for message', () => {
    const cases: [object, string | undefined][] = [
      [{ type: 'object', required: ['a', 'a'] }, undefined],
      [{ type: 'object', properties: { low: { type: 'number' }, high: { type: 'number', minimum: { $data: '1/low' } } } }, undefined],
      [{ type: 'object', properties: { id: { type: 'strnig' } } }, undefined],
    ];
    for (const entry of cases) entry[1] = added(entry[0]);
    expect(cases.map(([, message]) => message === undefined)).toEqual([false, true, false]);
    for (const [schema, message] of cases) {
      const dir = copyPipeline();
      // One more named schema beside the shipped ones (which reference one another).
      const main = path.join(dir, 'pipeline.yaml');
      writeFileSync(main, readFileSync(main, 'utf8').replace(/^schemas:\n/m, 'schemas:\n  probe: schemas/probe.schema.json\n'));
      writeFileSync(path.join(dir, 'schemas', 'probe.schema.json'), JSON.stringify(schema));
      const result = cli(['--dir', dir, 'validate'], { env: cliStore().env });
      if (message === undefined) expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 });
      else expect(result.stderr).toContain(`invalid JSON Schema: ${message}`);
    }
  });
});
