/**
 * The configuration cache keeps every schema of the configuration compiled to standalone code
 * (engine/config/prebuilt.ts). A prebuilt validator must be the compiled one in all but its
 * origin: the same answer and the same errors on valid and invalid data alike.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { configValidators } from '../../engine/config/config-schemas.js';
import { buildPipeline } from '../../engine/config/build.js';
import { prebuildSchemas } from '../../engine/config/prebuild.js';
import { loadPrebuilt } from '../../engine/config/prebuilt.js';
import { readConfigTexts } from '../../engine/config/read.js';
import { cli, cliIn, cliStore } from '../cli/cli.js';
import { ROOT, candidate, copyPipeline, proposalInput, tempDir } from '../helpers.js';

const env = { OLLAMA_MODEL: 'llama3.1' };

function errorsOf(validate: ValidateFunction): Partial<ErrorObject>[] {
  return (validate.errors ?? []).map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message }));
}

const confirmed = { id: '01J0ABCDEFGHJKMNPQRSTVWXYZ', artifact_id: 'a', status: 'confirmed', visibility: 'public', candidate: candidate() };
const samples: unknown[] = [
  null,
  'text',
  [],
  {},
  confirmed,
  { ...confirmed, visibility: 'nowhere' },
  { ...confirmed, candidate: { ...candidate(), scope: 42 } },
  { result: 'hit' },
  { result: 'miss', hit_count: 0, miss_count: 2 },
  { visibility: 'org', 'version-independent': 'because' },
  { reason: 'x'.repeat(5000) },
  candidate(),
];

describe('prebuilt schemas', () => {
  it('cover every schema of the shipped configuration and judge every sample exactly as the compiled validators do', async () => {
    const { pipeline, config } = buildPipeline(ROOT, readConfigTexts(ROOT, env), env, await configValidators(), { full: true });
    if (!pipeline || !config) throw new Error('the shipped configuration does not load');
    const prebuilt = prebuildSchemas(pipeline.schemas);
    if (!prebuilt) throw new Error('nothing prebuilt');
    const keys = pipeline.schemas.keys();
    expect(Object.keys(prebuilt).sort()).toEqual([...keys].sort());
    expect(keys.some((key) => key.startsWith('guard:'))).toBe(true);
    expect(keys.some((key) => key.startsWith('/named/'))).toBe(true);
    for (const key of keys) {
      const compiled = key.startsWith('/named/') ? pipeline.schemas.named$(key.slice('/named/'.length)) : pipeline.schemas.inline(key);
      const loaded = loadPrebuilt(prebuilt[key]!);
      expect(loaded).not.toBe(compiled);
      for (const sample of samples) {
        const copy = structuredClone(sample);
        expect({ key, sample, valid: loaded(copy) }).toEqual({ key, sample, valid: compiled(structuredClone(sample)) });
        expect(errorsOf(loaded)).toEqual(errorsOf(compiled));
      }
    }
  });

  it('are ignored, not trusted, when the code is not a validator', () => {
    expect(() => loadPrebuilt('module.exports = 42;')).toThrow(/not a validator/);
  });
});

describe('the binary', () => {
  it('keeps the prebuilt schemas in the configuration cache and runs commands with them', async () => {
    const { env } = cliStore();
    env['PIPELINE_CONFIG_CACHE'] = tempDir();
    expect(cli(['status'], { env }).code).toBe(0);
    const dir = path.join(env['PIPELINE_CONFIG_CACHE'], 'pipeline', 'config');
    const [entry] = readdirSync(dir).map((name) => JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as { prebuilt?: Record<string, string> });
    expect(Object.keys(entry?.prebuilt ?? {})).toEqual(expect.arrayContaining(['guard:justified', 'args:review:confirm', '/named/candidate']));
    // Set-up in process (no build id from source: it neither reads nor writes that cache).
    const proposed = await cliIn(['propose', '-'], { env, input: JSON.stringify(proposalInput()) });
    expect(proposed.code).toBe(0);
    // From here on every command of the binary reads its validators from that code.
    const id = proposed.stdout.trim();
    const refused = cli(['confirm', id, '--visibility', 'nowhere'], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/visibility/);
    expect(cli(['confirm', id, '--visibility', 'org'], { env }).code).toBe(0);
    expect((await cliIn(['status', '--json'], { env })).stdout).toMatch(/"confirmed": ?1/);
  });

  it('prebuilds them with one ajv copy even after the engine API compiled with ajv from node_modules', () => {
    // The built engine (dist/engine.js): buildPipeline, called first, takes ajv from node_modules;
    // a cache miss later must generate standalone code with that same copy, or it silently
    // generates none. Schemas that refer to each other are where the two copies part.
    const dir = copyPipeline();
    mkdirSync(path.join(dir, 'schemas', 'pair'));
    writeFileSync(path.join(dir, 'schemas', 'pair', 'a.json'), JSON.stringify({ $id: 'a.json', type: 'object', properties: { b: { $ref: 'b.json' } } }));
    writeFileSync(path.join(dir, 'schemas', 'pair', 'b.json'), JSON.stringify({ $id: 'b.json', type: 'object', properties: { a: { $ref: 'a.json' } } }));
    const main = readFileSync(path.join(dir, 'pipeline.yaml'), 'utf8');
    writeFileSync(path.join(dir, 'pipeline.yaml'), main.replace('schemas:\n', 'schemas:\n  pair-a: schemas/pair/a.json\n  pair-b: schemas/pair/b.json\n'));
    const cache = tempDir();
    const script = [
      `import { buildPipeline, loadPipeline } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine.js'))};`,
      `import { readConfigTexts } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'config', 'read.js'))};`,
      `import { configValidators } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'config', 'config-schemas.js'))};`,
      'const dir = process.argv[1];',
      'buildPipeline(dir, readConfigTexts(dir, process.env), process.env, await configValidators());',
      'await loadPipeline(dir);',
    ].join('\n');
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], {
      env: { ...process.env, PIPELINE_CONFIG_CACHE: cache },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    const cached = path.join(cache, 'pipeline', 'config');
    const [entry] = readdirSync(cached).map((name) => JSON.parse(readFileSync(path.join(cached, name), 'utf8')) as { prebuilt?: Record<string, string> });
    expect(Object.keys(entry?.prebuilt ?? {})).toEqual(expect.arrayContaining(['/named/pair-a', '/named/pair-b', '/named/candidate']));
  });
});
