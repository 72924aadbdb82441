/**
 * Compile a configuration's schemas to standalone code for the configuration cache (see
 * ./prebuilt.ts, which loads it). Only a configuration the cache does not hold gets here.
 */
import type { ValidateFunction } from 'ajv';
import { ajvStandalone, type createAjv } from './ajv.js';
import type { PrebuiltSchemas } from './prebuilt.js';
import type { SchemaRegistry } from './schema-registry.js';

type Generate = (ajv: ReturnType<typeof createAjv>, validate: ValidateFunction) => string;
/** ajv's standalone module is CommonJS: its function sits one or two `default`s deep, depending on the loader. */
function generator(value: unknown): Generate {
  return typeof value === 'function' ? (value as Generate) : generator((value as { default: unknown }).default);
}

/**
 * Standalone code for every schema of `registry`, generated from the validators it compiled (so
 * nothing is compiled twice). Its ajv must keep their source (`createAjv({ standalone: 'cjs' })`,
 * as `buildPipeline` makes it). Undefined when any of them cannot be made standalone: the cache
 * then simply holds none, and the schemas are compiled at first use as before.
 */
export function prebuildSchemas(registry: SchemaRegistry): PrebuiltSchemas | undefined {
  try {
    const generate = generator(ajvStandalone());
    const out: PrebuiltSchemas = {};
    for (const [key, validate] of registry.validatorsByKey()) out[key] = generate(registry.ajv, validate);
    return out;
  } catch {
    return undefined;
  }
}
