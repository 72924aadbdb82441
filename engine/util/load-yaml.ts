/**
 * The YAML package, for a command that reads or prints YAML outside the configuration loader.
 * Loaded then, never at start (scripts/check-imports.js, rule 3). It is CommonJS: imported from
 * the bundle its exports are the module's default export, imported by Node they are both.
 */
type Yaml = typeof import('yaml');

export async function loadYaml(): Promise<Yaml> {
  const loaded = (await import('yaml')) as Yaml & { default?: Yaml };
  return loaded.default ?? loaded;
}
