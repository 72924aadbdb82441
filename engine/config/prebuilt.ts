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

/** Schema key (see `SchemaRegistry.keys`) → the standalone CommonJS module of its validator. */
export type PrebuiltSchemas = Record<string, string>;

const requireHere = createRequire(import.meta.url);

/** The validator of one prebuilt module (ajv's runtime helpers resolved from the engine's own dependencies). */
export function loadPrebuilt(code: string): ValidateFunction {
  const module = { exports: {} as Record<string, unknown> };
  new Function('module', 'exports', 'require', code)(module, module.exports, requireHere);
  const validate = (module.exports['default'] ?? module.exports) as ValidateFunction;
  if (typeof validate !== 'function') throw new Error('not a validator');
  return validate;
}
