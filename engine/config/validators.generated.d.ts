// Type declarations for the module scripts/compile-validators.js writes into dist/ at build time.
import type { ValidateFunction } from 'ajv';

export declare const schemaHash: string;
export declare const buildId: string;
export declare const pipeline: ValidateFunction;
export declare const machine: ValidateFunction;
export declare const stage: ValidateFunction;
export declare const rubric: ValidateFunction;
/** The draft-07 meta-schema (with `$data`), as `createAjv`'s options compile it. */
export declare const draft07Meta: ValidateFunction;
/** The version of ajv that compiled these. */
export declare const ajvVersion: string;
