// Type declarations for the module scripts/compile-validators.js writes into dist/ at build time.
export declare const schemaHash: string;
export declare const buildId: string;
