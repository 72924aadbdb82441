/**
 * SPEC §2: configuration that validates but can never run is a positioned error reported by
 * `validate` (exit 1) — a rubric criterion no judge of its panel can score when the gate needs
 * it, a judge pointed at a provider whose key variable is unset — and, conversely, an unset
 * `${VAR}` in a provider no stage uses is only a warning, so it blocks nothing.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyPipeline, tempDir } from '../helpers.js';
import { cli } from '../cli/cli.js';
import { runIn } from '../cli/memory-io.js';

function edit(dir: string, file: string, from: string | RegExp, to: string): void {
  const full = path.join(dir, file);
  const text = readFileSync(full, 'utf8');
  const next = text.replace(from, to);
  if (next === text) throw new Error(`${file}: nothing to replace`);
  writeFileSync(full, next);
}

/** The environment without the given variables. */
function without(...names: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) env[name] = '';
  return env;
}

describe('criteria no judge can score', () => {
  it('refuses a misspelled floored criterion that the offline judges never score, naming the file, line and the near miss', async () => {
    const dir = copyPipeline();
    edit(dir, 'rubrics/lesson-promotion.yaml', '{ name: generality, weight: 0.20', '{ name: generalty, weight: 0.20');
    const ran = await runIn(['validate', '--dir', dir], {});
    expect(ran.code).toBe(1);
    expect(ran.stderr.replaceAll(dir, '<dir>')).toMatchInlineSnapshot(`
      "rubrics/lesson-promotion.yaml:11:13: criterion "generalty" has a floor (min_pass 0.6), but no judge can score it: standard → standard-checks and adversarial → adversarial-checks (stages/judge.yaml) score only disclosure, generality, grounding and scope_accuracy; every proposal judged under lesson-promotion would be left unjudged
        hint: did you mean "generality"?
      error: invalid configuration (1 error) in <dir>
      "
    `);
  });

  it('refuses a panel whose scorable weight is below the minimum coverage', async () => {
    const dir = copyPipeline();
    const criteria = ['  - { name: grounding, weight: 0.45 }', '  - { name: novelty, weight: 0.55 }'];
    edit(dir, 'rubrics/lesson-promotion.yaml', /criteria:\n[\s\S]*?score_threshold/, `criteria:\n${criteria.join('\n')}\nscore_threshold`);
    const ran = await runIn(['validate', '--dir', dir], {});
    expect(ran.code).toBe(1);
    expect(ran.stderr.replaceAll(dir, '<dir>')).toMatchInlineSnapshot(`
      "rubrics/lesson-promotion.yaml:14:25: the judges can score criteria worth 0.45 of the weight, below min_criterion_coverage 0.6: standard → standard-checks and adversarial → adversarial-checks (stages/judge.yaml) score only disclosure, generality, grounding and scope_accuracy; every proposal judged under lesson-promotion would be left unjudged
        hint: score more of the criteria, or lower min_criterion_coverage
      warning: rubrics/lesson-promotion.yaml:10:13: criterion "novelty" is scored by no judge (standard → standard-checks and adversarial → adversarial-checks (stages/judge.yaml) score only disclosure, generality, grounding and scope_accuracy), so it never counts
        hint: declare the criterion in a checks provider of the panel, or seat a model that scores it
      error: invalid configuration (1 error) in <dir>
      "
    `);
  });

  it('only warns about an unscored criterion the gate does not need (no floor, coverage still met)', async () => {
    const dir = copyPipeline();
    const criteria = [
      '  - { name: grounding, weight: 0.45, min_pass: 0.7 }',
      '  - { name: scope_accuracy, weight: 0.35, min_pass: 0.7 }',
      '  - { name: novelty, weight: 0.20 }',
    ];
    edit(dir, 'rubrics/lesson-promotion.yaml', /criteria:\n[\s\S]*?score_threshold/, `criteria:\n${criteria.join('\n')}\nscore_threshold`);
    const ran = await runIn(['validate', '--dir', dir], {});
    expect(ran.code).toBe(0);
    expect(ran.stderr).toMatchInlineSnapshot(`
      "warning: rubrics/lesson-promotion.yaml:11:13: criterion "novelty" is scored by no judge (standard → standard-checks and adversarial → adversarial-checks (stages/judge.yaml) score only disclosure, generality, grounding and scope_accuracy), so it never counts
        hint: declare the criterion in a checks provider of the panel, or seat a model that scores it
      "
    `);
  });

  it('trusts a model seat to score any criterion', async () => {
    const dir = copyPipeline();
    edit(dir, 'rubrics/lesson-promotion.yaml', '{ name: generality, weight: 0.20', '{ name: novelty, weight: 0.20');
    edit(dir, 'stages/judge.yaml', 'adversarial: adversarial-checks', 'adversarial: claude');
    const ran = await runIn(['validate', '--dir', dir], {});
    expect([ran.code, ran.stderr]).toEqual([0, '']);
  });
});

describe('provider keys', () => {
  it('refuses a judge pointed at a provider whose api_key_env is unset, at the line that points it there', async () => {
    const dir = copyPipeline();
    edit(dir, 'stages/judge.yaml', 'adversarial: adversarial-checks', 'adversarial: anthropic');
    const unset = await runIn(['validate', '--dir', dir], without('ANTHROPIC_API_KEY'));
    expect(unset.code).toBe(1);
    expect(unset.stderr.replaceAll(dir, '<dir>')).toMatchInlineSnapshot(`
      "stages/judge.yaml:26:16: judge type adversarial uses provider "anthropic", whose key variable ANTHROPIC_API_KEY is not set: every call would fail
        hint: set ANTHROPIC_API_KEY (api_key_env of "anthropic" in pipeline.yaml), or point judge type adversarial at another provider
      error: invalid configuration (1 error) in <dir>
      "
    `);
    // every other command refuses too, before writing anything
    const status = await runIn(['status', '--dir', dir, '--store', path.join(tempDir(), 'store')], without('ANTHROPIC_API_KEY'));
    expect(status.code).toBe(1);
    const set = await runIn(['validate', '--dir', dir], { ANTHROPIC_API_KEY: 'sk-test' });
    expect(set.code).toBe(0);
  });

  it('keeps a cached configuration only while its key variables are set, and never caches a key (the binary: the cache needs a build)', () => {
    const dir = copyPipeline();
    edit(dir, 'stages/judge.yaml', 'adversarial: adversarial-checks', 'adversarial: anthropic');
    const cache = tempDir();
    const store = path.join(tempDir(), 'store');
    const withKey = cli(['status', '--dir', dir, '--store', store], { env: { PIPELINE_CONFIG_CACHE: cache, ANTHROPIC_API_KEY: 'sk-secret-value' } });
    expect(withKey.code).toBe(0);
    const files = readdirSync(path.join(cache, 'pipeline', 'config'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(readFileSync(path.join(cache, 'pipeline', 'config', file), 'utf8')).not.toContain('sk-secret-value');
    const withoutKey = cli(['status', '--dir', dir, '--store', store], { env: { PIPELINE_CONFIG_CACHE: cache, ANTHROPIC_API_KEY: '' } });
    expect(withoutKey.code).toBe(1);
    expect(withoutKey.stderr).toMatch(/key variable ANTHROPIC_API_KEY is not set/);
  });
});

describe('unset variables in providers no stage uses', () => {
  it('are a warning that leaves the provider out, not an error that blocks every command', async () => {
    const dir = copyPipeline();
    edit(dir, 'pipeline.yaml', 'base_url: ${OLLAMA_BASE_URL:-http://localhost:11434/v1}', 'base_url: ${OLLAMA_BASE_URL}');
    const env = { ...without('OLLAMA_BASE_URL'), PIPELINE_STORE: tempDir() };
    const status = await runIn(['status', '--dir', dir], env);
    expect(status.code).toBe(0);
    expect(status.stderr.replaceAll(env.PIPELINE_STORE, '<store>')).toMatchInlineSnapshot(`
      "warning: pipeline.yaml:208:15: environment variable OLLAMA_BASE_URL is not set (in provider "ollama", which no stage uses: it is left out until the variable is set)
        hint: set the variable, or give a default with \${NAME:-default}
      warning: no store at <store>; nothing has been written there yet
      "
    `);
    const validate = await runIn(['validate', '--dir', dir], env);
    expect(validate.code).toBe(0);
    // ollama is left out of what was loaded
    expect(validate.stdout).toContain(
      'providers mapper (map), standard-checks (checks), adversarial-checks (checks), claude (command), anthropic (anthropic)\n',
    );
  });

  it('are still an error in a provider a stage uses', async () => {
    const dir = copyPipeline();
    edit(dir, 'pipeline.yaml', 'base_url: ${OLLAMA_BASE_URL:-http://localhost:11434/v1}', 'base_url: ${OLLAMA_BASE_URL}');
    edit(dir, 'stages/judge.yaml', 'standard: standard-checks', 'standard: ollama');
    const ran = await runIn(['validate', '--dir', dir], without('OLLAMA_BASE_URL'));
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/^pipeline\.yaml:\d+:\d+: environment variable OLLAMA_BASE_URL is not set\n/);
  });
});
