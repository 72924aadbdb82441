/**
 * The YAML package, for a command that reads or prints YAML outside the configuration loader.
 * Loaded then, never at start (scripts/check-imports.js, rule 3).
 */
import { commonJsExports } from './commonjs.js';

type Yaml = typeof import('yaml');

export async function loadYaml(): Promise<Yaml> {
  return commonJsExports<Yaml>(await import('yaml'));
}
