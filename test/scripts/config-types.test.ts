/**
 * The configuration types are generated from the schemas (scripts/generate-config-types.js): the
 * committed module is what the schemas generate today, and a schema change the module does not
 * follow makes `--check` (run here and by the build) fail.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain JavaScript build script, without declarations
import { generate } from '../../scripts/generate-config-types.js';
import { ROOT, tempDir } from '../helpers.js';

const GENERATED = path.join('engine', 'config', 'schema-types.generated.ts');
const SCRIPT = path.join(ROOT, 'scripts', 'generate-config-types.js');

/** A scratch root with the real schemas and the committed generated module. */
function scratch(): string {
  const dir = tempDir('config-types-');
  cpSync(path.join(ROOT, 'schemas', 'config'), path.join(dir, 'schemas', 'config'), { recursive: true });
  mkdirSync(path.join(dir, 'engine', 'config'), { recursive: true });
  cpSync(path.join(ROOT, GENERATED), path.join(dir, GENERATED));
  return dir;
}

const check = (root: string) => spawnSync(process.execPath, [SCRIPT, '--check', '--root', root], { encoding: 'utf8' });

function editRubricSchema(root: string, edit: (schema: Record<string, any>) => void): void {
  const file = path.join(root, 'schemas', 'config', 'rubric.schema.json');
  const schema = JSON.parse(readFileSync(file, 'utf8')) as Record<string, any>;
  edit(schema);
  writeFileSync(file, JSON.stringify(schema, null, 2));
}

// Each test runs the generator (which loads json-schema-to-typescript) one to three times in a
// row: 2.5–4 s alone, up to 26.4 s beside a torture run and two unit suites on two vCPUs
// (2026-12-06). What they check does not depend on time.
describe('configuration types', () => {
  it('are exactly what the schemas generate', async () => {
    expect(await generate(ROOT)).toBe(readFileSync(path.join(ROOT, GENERATED), 'utf8'));
  }, 120_000);

  it('--check fails, naming the command to run, when a schema gains a field the types lack', () => {
    // (The scratch copy as made passes --check: the first test compares the same files, and the
    // last check below passes once the types are regenerated.)
    const root = scratch();
    editRubricSchema(root, (schema) => {
      schema.properties.reviewer_note = { type: 'string' };
    });
    const result = check(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('out of date');
    expect(result.stderr).toContain('npm run generate:types');
    // Regenerated, the new field is typed.
    expect(spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' }).status).toBe(0);
    expect(readFileSync(path.join(root, GENERATED), 'utf8')).toMatch(/reviewer_note\?: string/);
    expect(check(root).status).toBe(0);
  }, 120_000);

  it('stops on a keyword it does not know how to type, naming the file and the place', () => {
    const root = scratch();
    editRubricSchema(root, (schema) => {
      schema.properties.id.dependentSchemas = {};
    });
    const result = check(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/rubric\.schema\.json: at properties\/id: keyword "dependentSchemas"/);
  }, 120_000);
});
