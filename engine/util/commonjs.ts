/**
 * The exports of a CommonJS package loaded with a dynamic `import()`: from the bundle (esbuild)
 * they are the module's default export only; under Node they are both that and named exports.
 */
export function commonJsExports<T>(loaded: unknown): T {
  return ((loaded as { default?: T }).default ?? loaded) as T;
}
