/**
 * A configuration's schemas — its domain schemas, guards, command arguments, checks — compiled once to
 * standalone code (ajv standalone, CommonJS) and kept in the configuration cache with the
 * configuration they belong to, so a command on an unchanged configuration runs them without
 * compiling them (that compile was a tenth of a short command's time). The code is ajv's own
 * output for schemas that passed full validation, read back only from the user's own cache
 * directory (see `configCacheDir`), and evaluated on first use of each schema.
 */
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import * as standalone from 'ajv/dist/standalone/index.js';
import { createAjv } from './ajv.js';
import { namedKey, type SchemaRegistry } from './schema-registry.js';

/** Schema key (see `SchemaRegistry.schemasByKey`) → the standalone CommonJS module of its validator. */
export type PrebuiltSchemas = Record<string, string>;

type Generate = (ajv: ReturnType<typeof createAjv>, validate: ValidateFunction) => string;
/** ajv's standalone module is CommonJS: its function sits one or two `default`s deep, depending on the loader. */
function generator(value: unknown): Generate {
  return typeof value === 'function' ? (value as Generate) : generator((value as { default: unknown }).default);
}

/**
 * Standalone code for every schema of `registry` — the named domain schemas (`named`: their ids)
 * and the inline ones. Undefined when any of them cannot be made standalone: the cache then
 * simply holds none, and the schemas are compiled at first use as before.
 */
export function prebuildSchemas(registry: SchemaRegistry, named: { name: string; id: string; schema: object }[]): PrebuiltSchemas | undefined {
  try {
    const generate = generator(standalone);
    const ajv = createAjv({ standalone: 'cjs', validateSchema: false });
    for (const { id, schema } of named) ajv.addSchema(schema, id);
    const ids = new Map(named.map(({ name, id }) => [namedKey(name), id]));
    const out: PrebuiltSchemas = {};
    for (const [key, schema] of registry.schemasByKey()) {
      const id = ids.get(key);
      const validate = id === undefined ? ajv.compile(schema as object) : ajv.getSchema(id);
      if (!validate) return undefined;
      out[key] = generate(ajv, validate);
    }
    return out;
  } catch {
    return undefined;
  }
}

const requireHere = createRequire(import.meta.url);

/** The validator of one prebuilt module (ajv's runtime helpers resolved from the engine's own dependencies). */
export function loadPrebuilt(code: string): ValidateFunction {
  const module = { exports: {} as Record<string, unknown> };
  new Function('module', 'exports', 'require', code)(module, module.exports, requireHere);
  const validate = (module.exports['default'] ?? module.exports) as ValidateFunction;
  if (typeof validate !== 'function') throw new Error('not a validator');
  return validate;
}
