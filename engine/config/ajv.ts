/**
 * The one ajv setup: draft-07, every error collected, verbose (for messages), `$data` references,
 * and a few keywords JSON Schema lacks. Editors ignore the extra keywords; the engine enforces them.
 */
import { createRequire } from 'node:module';
import type * as AjvPackage from 'ajv';
import type { Ajv, AnySchema, AnySchemaObject, Code, KeywordCxt, Name, ValidateFunction } from 'ajv';
import { commonJsExports } from '../util/commonjs.js';

export type { ErrorObject } from 'ajv';

/**
 * ajv itself (a fifth of the bundle) is loaded only when a schema is compiled: a command on a
 * configuration the cache holds runs prebuilt validators and never needs it. Callers that are
 * about to compile load it ahead, asynchronously (`preloadAjv`, from the bundle); anything else
 * gets it on the spot from the engine's own dependencies. Its standalone code generator always
 * comes from the same copy as the Ajv it is given: it tells ajv's code objects by `instanceof`,
 * and with another copy's it silently generates nothing.
 */
let ajvPackage: typeof AjvPackage | undefined;
let standaloneModule: unknown;
const requireHere = createRequire(import.meta.url);

export async function preloadAjv(): Promise<void> {
  if (ajvPackage) return;
  const [core, standalone] = await Promise.all([import('ajv'), import('ajv/dist/standalone/index.js')]);
  if (ajvPackage) return; // loaded on the spot meanwhile: keep that copy whole
  ajvPackage = commonJsExports<typeof AjvPackage>(core);
  standaloneModule = standalone;
}

function loadedAjv(): typeof AjvPackage {
  ajvPackage ??= requireHere('ajv') as typeof AjvPackage;
  return ajvPackage;
}

/** ajv's standalone module (`standaloneCode`), from the copy `createAjv` uses. */
export function ajvStandalone(): unknown {
  loadedAjv();
  standaloneModule ??= requireHere('ajv/dist/standalone/index.js');
  return standaloneModule;
}

interface SumEquals {
  property: string;
  value: number;
  tolerance?: number;
  label?: string;
}

/** The ids under which a schema asks for the meta-schema `createAjv`'s instances default to (draft-07). */
const DRAFT_07 = new Set(['http://json-schema.org/draft-07/schema', 'http://json-schema.org/draft-07/schema#']);

let prebuiltMeta: ValidateFunction | undefined;
let withPrebuiltMeta: typeof Ajv | undefined;

/**
 * The draft-07 meta-schema's validator as the build compiled it (scripts/compile-validators.js,
 * with `createAjv`'s options, so with `$data`), for checking the pipeline's own JSON Schemas
 * without compiling the meta-schema in every process that validates a configuration (a quarter
 * of a cold `status` with no configuration cache). Used only when `builtWith` is the version of
 * the ajv loaded here; with anything else ajv compiles the meta-schema itself, as before.
 */
export function usePrebuiltMeta(validate: unknown, builtWith: unknown): void {
  let version: unknown;
  try {
    version = (requireHere('ajv/package.json') as { version?: unknown }).version;
  } catch {
    version = undefined; // not known: ajv checks schemas itself
  }
  prebuiltMeta =
    typeof validate === 'function' && typeof builtWith === 'string' && typeof version === 'string' && builtWith === version
      ? (validate as ValidateFunction)
      : undefined;
}

/** Whether `createAjv`'s instances check schemas with the prebuilt meta-schema validator. */
export function prebuiltMetaInUse(): boolean {
  return prebuiltMeta !== undefined;
}

/**
 * Does a schema name anything at json-schema.org besides its own `$schema` (a `$ref` to the
 * meta-schema or one of its definitions, an `$id` there, a sub-schema's `$schema`)? ajv compiles
 * a meta-schema reached that way with the instance's own options unless its check compiled it
 * first, with the options for meta-schemas; such a schema gets ajv's own check, as before.
 */
function namesMetaSchemas(schema: AnySchemaObject): boolean {
  const { $schema: _, ...rest } = schema;
  try {
    return JSON.stringify(rest).includes('json-schema.org');
  } catch {
    return true; // not JSON (a cycle): whatever ajv makes of it
  }
}

/**
 * ajv, checking a schema against the draft-07 meta-schema with the prebuilt validator: the same
 * answer, `errors` and message as ajv's own `validateSchema`, which still handles every other
 * `$schema` (and boolean schemas).
 */
function ajvWithPrebuiltMeta(Base: typeof Ajv): typeof Ajv {
  withPrebuiltMeta ??= class extends Base {
    override validateSchema(schema: AnySchema, throwOrLogError?: boolean): boolean | Promise<unknown> {
      const meta = prebuiltMeta;
      const $schema = typeof schema === 'object' ? (schema as AnySchemaObject).$schema : undefined;
      if (!meta || typeof schema !== 'object' || ($schema !== undefined && !DRAFT_07.has($schema as string)) || namesMetaSchemas(schema as AnySchemaObject))
        return super.validateSchema(schema, throwOrLogError);
      const valid = meta(schema);
      this.errors = valid ? null : (meta.errors ?? null);
      if (!valid && throwOrLogError) throw new Error(`schema is invalid: ${this.errorsText()}`);
      return valid;
    }
  };
  return withPrebuiltMeta;
}

/** `standalone`: keep each validator's source for ajv's standalone code, as an ES module (the build) or CommonJS (the cache). */
export function createAjv(options: { standalone?: boolean | 'cjs'; validateSchema?: boolean } = {}): Ajv {
  const { Ajv: Base, _ } = loadedAjv();
  const access = accessOf(_);
  const Ajv = prebuiltMeta ? ajvWithPrebuiltMeta(Base) : Base;
  const ajv = new Ajv({
    validateSchema: options.validateSchema ?? true,
    ...(options.standalone ? { code: { source: true, esm: options.standalone !== 'cjs' } } : {}),
    allErrors: true,
    verbose: true,
    $data: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
    logger: false,
  });

  // A human message for the enclosing schema; shown instead of ajv's wording.
  ajv.addKeyword({ keyword: 'message', schemaType: 'string' });
  // Editor annotations some schemas carry.
  ajv.addKeyword({ keyword: 'markdownDescription', schemaType: 'string' });

  // Code-generating keywords, so the config validators can be compiled to standalone code at
  // build time (scripts/compile-validators.js) and a command starts without compiling schemas.

  // `sumEquals: {property: weight, value: 1}` on an array of objects: the property sums to value.
  ajv.addKeyword({
    keyword: 'sumEquals',
    type: 'array',
    schemaType: 'object',
    error: {
      message: 'sum',
      params: ({ data, schema }) =>
        _`{sum: ${data}.reduce((t, i) => t + i[${(schema as SumEquals).property}], 0), expected: ${(schema as SumEquals).value}, property: ${(schema as SumEquals).property}, label: ${(schema as SumEquals).label ?? null}}`,
    },
    code(cxt: KeywordCxt) {
      const { data, schema } = cxt as unknown as { data: Name; schema: SumEquals };
      const p = schema.property;
      cxt.fail(
        _`${data}.every((i) => i && typeof i[${p}] === "number" && Number.isFinite(i[${p}])) && Math.abs(${data}.reduce((t, i) => t + i[${p}], 0) - ${schema.value}) > ${schema.tolerance ?? 1e-9}`,
      );
    },
  });

  // `uniqueProperty: name` on an array of objects: no two items share the value.
  ajv.addKeyword({
    keyword: 'uniqueProperty',
    type: 'array',
    schemaType: 'string',
    error: {
      message: 'duplicate',
      params: ({ data, schema }) =>
        _`((d, p) => { const seen = new Map(); for (let i = 0; i < d.length; i++) { const v = d[i] && typeof d[i] == "object" ? d[i][p] : undefined; if (v === undefined) continue; if (seen.has(v)) return {property: p, value: v, index: i}; seen.set(v, i); } return {property: p}; })(${data}, ${schema as string})`,
    },
    code(cxt: KeywordCxt) {
      const { data, schema } = cxt as unknown as { data: Name; schema: string };
      cxt.fail(
        _`((d, p) => { const seen = new Set(); for (const i of d) { const v = i && typeof i == "object" ? i[p] : undefined; if (v === undefined) continue; if (seen.has(v)) return true; seen.add(v); } return false; })(${data}, ${schema})`,
      );
    },
  });

  // `keysListed: {keys: "scope.versions", in: "stack"}`: every key of one member is listed in another.
  ajv.addKeyword({
    keyword: 'keysListed',
    type: 'object',
    schemaType: 'object',
    error: {
      message: 'not listed',
      params: ({ data, schema }) => {
        const { keys, in: list } = schema as { keys: string; in: string };
        return _`((m, l) => ({unknown: Object.keys(m).filter((k) => !l.includes(k)), allowed: l, keys: ${keys}, in: ${list}}))(${access(data, keys)}, ${access(data, list)})`;
      },
    },
    code(cxt: KeywordCxt) {
      const { data, schema } = cxt as unknown as { data: Name; schema: { keys: string; in: string } };
      cxt.fail(
        _`((m, l) => m !== null && typeof m == "object" && !Array.isArray(m) && Array.isArray(l) && Object.keys(m).some((k) => !l.includes(k)))(${access(data, schema.keys)}, ${access(data, schema.in)})`,
      );
    },
  });
  return ajv;
}

/** `data?.["a"]?.["b"]` for a dotted path. */
function accessOf(_: typeof AjvPackage._): (data: Name, path: string) => Code {
  return (data, path) => path.split('.').reduce<Code>((code, key) => _`${code}?.[${key}]`, _`${data}`);
}

export function schemaMessage(schema: AnySchemaObject | undefined): string | undefined {
  const message = schema?.['message'];
  return typeof message === 'string' ? message : undefined;
}
