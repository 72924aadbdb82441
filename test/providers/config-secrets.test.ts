/**
 * SPEC §6: secrets are never printed. An `api_key_env` must be a variable name: a key pasted in
 * its place (or interpolated into it) is a positioned configuration error that does not echo it,
 * from the engine's loader and from every command of the real binary; a base_url that carries
 * credentials is never quoted either.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configValidators } from '../../engine/config/config-schemas.js';
import { looksLikeKey } from '../../engine/config/cross-check.js';
import { buildPipeline } from '../../engine/config/build.js';
import { readConfigTexts } from '../../engine/config/read.js';
import { formatIssue } from '../../engine/errors.js';
import { cli, cliStore } from '../cli/cli.js';
import { copyPipeline } from '../helpers.js';

const ANTHROPIC_KEY = 'sk-ant-api03-Zx8Qw2Lr5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8';
const AWS_LIKE = 'AKIAZX8QW2LR5TY7UI9O';

/** A copy of the shipped pipeline with pipeline.yaml edited; the loaded issues as printed lines. */
async function loadEdited(edit: (yaml: string) => string, env: Record<string, string> = {}) {
  const dir = copyPipeline();
  const file = path.join(dir, 'pipeline.yaml');
  const before = readFileSync(file, 'utf8');
  writeFileSync(file, edit(before));
  const { issues } = buildPipeline(dir, readConfigTexts(dir, env), env, await configValidators(), { full: true });
  const line = (needle: string) =>
    edit(before)
      .split('\n')
      .findIndex((text) => text.includes(needle)) + 1;
  return { dir, text: issues.map(formatIssue), line };
}

describe('api_key_env', () => {
  it('refuses a pasted key at its position without echoing it', async () => {
    const { text, line } = await loadEdited((yaml) => yaml.replace('api_key_env: ANTHROPIC_API_KEY', `api_key_env: ${ANTHROPIC_KEY}`));
    expect(text).toEqual([
      `pipeline.yaml:${line('api_key_env:')}:5: api_key_env: must be the name of an environment variable (letters, digits and _, e.g. ANTHROPIC_API_KEY), never the key itself; the value is not shown`,
    ]);
  });

  it('refuses a key that happens to look like a variable name, without echoing it', async () => {
    const { text, line } = await loadEdited((yaml) => yaml.replace('    json_mode: true', `    json_mode: true\n    api_key_env: ${AWS_LIKE}`));
    expect(text).toEqual([
      `pipeline.yaml:${line(AWS_LIKE)}:18: api_key_env looks like a key itself, not the name of an environment variable (the value is not shown)\n  hint: put the key in an environment variable and name that variable here, e.g. api_key_env: ANTHROPIC_API_KEY`,
    ]);
  });

  it('refuses a key interpolated into it from the environment, without echoing it', async () => {
    const { text } = await loadEdited((yaml) => yaml.replace('api_key_env: ANTHROPIC_API_KEY', 'api_key_env: ${ANTHROPIC_API_KEY}'), {
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    });
    expect(text).toHaveLength(1);
    expect(text.join('\n')).not.toContain('Zx8Qw2');
  });

  it('takes ordinary variable names', async () => {
    for (const name of ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY_2', 'my_gateway_key', 'LLM_GATEWAY_TOKEN_FOR_PRODUCTION_USE', 'AZURE_OPENAI_KEY_WESTEUROPE2'])
      expect(looksLikeKey(name), name).toBe(false);
    for (const key of [AWS_LIKE, `ghp_${'a1B2'.repeat(9)}`, `npm_${'Zq9'.repeat(12)}`, `sk_live_${'4eC39HqLyjWDarjtT1zdp7dc'}`, `AIza${'Sy9'.repeat(11)}Qw`])
      expect(looksLikeKey(key), key).toBe(true);
    const { text } = await loadEdited((yaml) => yaml.replace('api_key_env: ANTHROPIC_API_KEY', 'api_key_env: MY_GATEWAY_KEY_2'));
    expect(text).toEqual([]);
  });

  it('is never echoed by a command of the real binary', () => {
    const dir = copyPipeline();
    const file = path.join(dir, 'pipeline.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('api_key_env: ANTHROPIC_API_KEY', `api_key_env: ${ANTHROPIC_KEY}`));
    const { env } = cliStore();
    for (const command of [['validate'], ['status'], ['run', 'judge', '--dry-run']]) {
      const result = cli(['--dir', dir, ...command], { env });
      expect(result.code, command.join(' ')).toBe(1);
      expect(result.stderr + result.stdout).toMatch(/api_key_env: must be the name of an environment variable/);
      expect(result.stderr + result.stdout).not.toContain('Zx8Qw2');
    }
  });
});

describe('base_url', () => {
  it('refuses a URL of another scheme without quoting it (it may carry credentials)', async () => {
    const { text, line } = await loadEdited((yaml) =>
      yaml.replace('base_url: ${OLLAMA_BASE_URL:-http://localhost:11434/v1}', 'base_url: ftp://bob:hunter2@files.example.com/v1'),
    );
    expect(text).toEqual([
      `pipeline.yaml:${line('ftp://')}:5: base_url: must be an http:// or https:// URL; the value is not shown (a URL may carry credentials)`,
    ]);
  });
});

describe('a command provider env: list', () => {
  it('names the variables passed through; a value in it is refused without being quoted', async () => {
    const { text, line } = await loadEdited((yaml) =>
      yaml.replace('env: [ANTHROPIC_API_KEY]', `env: [ANTHROPIC_API_KEY, "ANTHROPIC_API_KEY=${ANTHROPIC_KEY}"]`),
    );
    expect(text).toEqual([
      `pipeline.yaml:${line('env: [')}:30: item 2 of env: must be the name of an environment variable to pass through (e.g. ANTHROPIC_API_KEY); the value is not shown`,
    ]);
  });

  it('is a list: the map form that set values is refused', async () => {
    const { text, line } = await loadEdited((yaml) => yaml.replace('env: [ANTHROPIC_API_KEY]', 'env: { FIXTURE: value }'));
    expect(text).toEqual([`pipeline.yaml:${line('env: {')}:5: env must be a list, got a map`]);
  });
});
