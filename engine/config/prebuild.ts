/**
 * Compile a configuration's schemas to standalone code for the configuration cache (see
 * ./prebuilt.ts, which loads it). Only a configuration the cache does not hold gets here.
 */
import type { ValidateFunction } from 'ajv';
import { ajvStandalone, createAjv } from './ajv.js';
import type { PrebuiltSchemas } from './prebuilt.js';
import { namedKey, type SchemaRegistry } from './schema-registry.js';

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
    const ajv = createAjv({ standalone: 'cjs', validateSchema: false });
    const generate = generator(ajvStandalone());
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
