/**
 * SPEC §2: bad configuration gets a positioned error that says something true, never a crash:
 * absurdly nested `${…}` defaults, a variable named like a member of Object.prototype, YAML's
 * .nan / .inf where a number belongs, and durations no timer can wait.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configValidators } from '../../engine/config/config-schemas.js';
import { DURATION_KEYS } from '../../engine/config/durations.js';
import { interpolate, InterpolationError, MAX_NESTING } from '../../engine/config/interpolate.js';
import { buildPipeline } from '../../engine/config/build.js';
import { readConfigTexts } from '../../engine/config/read.js';
import { formatIssue } from '../../engine/errors.js';
import { copyPipeline, ROOT } from '../helpers.js';

async function loadEdited(file: string, edit: (text: string) => string, env: Record<string, string | undefined> = {}): Promise<string[]> {
  const dir = copyPipeline();
  const full = path.join(dir, file);
  const before = readFileSync(full, 'utf8');
  const after = edit(before);
  if (after === before) throw new Error(`the edit of ${file} changed nothing`);
  writeFileSync(full, after);
  const { issues } = buildPipeline(dir, readConfigTexts(dir, env), env, await configValidators(), { full: true });
  return issues.map(formatIssue);
}

const lineOf = (file: string, needle: string) =>
  readFileSync(path.join(ROOT, file), 'utf8')
    .split('\n')
    .findIndex((line) => line.includes(needle)) + 1;
const nested = (depth: number) => `${'${A:-'.repeat(depth)}x${'}'.repeat(depth)}`;

describe('${…} nested too deep', () => {
  it(`expands up to ${MAX_NESTING} levels and refuses more, without recursion to match the input`, () => {
    expect(interpolate(nested(MAX_NESTING), {})).toBe('x');
    expect(() => interpolate(nested(MAX_NESTING + 1), {})).toThrow(InterpolationError);
    expect(() => interpolate(nested(100_000), {})).toThrow(`nested more than ${MAX_NESTING} levels deep`);
  });

  it('5,000 levels in a YAML value is a positioned error naming the limit, with a short quote', async () => {
    const text = await loadEdited('pipeline.yaml', (yaml) => yaml.replace('name: lesson-promotion', () => `name: "${nested(5_000)}"`));
    const line = lineOf('pipeline.yaml', 'name: lesson-promotion');
    const quoted = `"${'${A:-'.repeat(12)}…"`;
    expect(text).toEqual([`pipeline.yaml:${line}:7: "\${…}" nested more than 32 levels deep in ${quoted}\n  hint: nest defaults at most 32 levels deep`]);
  });

  it('never takes a variable from Object.prototype', () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(() => interpolate(`\${${name}}`, { PATH: '/bin' })).toThrow(`environment variable ${name} is not set`);
      expect(interpolate(`\${${name}:-fallback}`, {})).toBe('fallback');
    }
  });
});

describe('a number that is not finite', () => {
  it('.nan and .inf as a weight: "must be a finite number, got .nan", as written, at the value', async () => {
    const line = lineOf('rubrics/lesson-promotion.yaml', 'weight: 0.45');
    const nan = await loadEdited('rubrics/lesson-promotion.yaml', (yaml) => yaml.replace('weight: 0.45', 'weight: .nan'));
    expect(nan).toEqual([`rubrics/lesson-promotion.yaml:${line}:32: weight must be a finite number, got .nan`]);
    const inf = await loadEdited('rubrics/lesson-promotion.yaml', (yaml) => yaml.replace('weight: 0.45', 'weight: -.Inf'));
    expect(inf).toEqual([`rubrics/lesson-promotion.yaml:${line}:32: weight must be a finite number, got -.Inf`]);
  });

  it('.inf as a threshold', async () => {
    const line = lineOf('rubrics/lesson-promotion.yaml', 'score_threshold:');
    const text = await loadEdited('rubrics/lesson-promotion.yaml', (yaml) => yaml.replace(/score_threshold: [0-9.]+/, 'score_threshold: .inf'));
    const col = readFileSync(path.join(ROOT, 'rubrics/lesson-promotion.yaml'), 'utf8').split('\n')[line - 1]!.indexOf('score_threshold:') + 18;
    expect(text).toEqual([`rubrics/lesson-promotion.yaml:${line}:${col}: score_threshold must be a finite number, got .inf`]);
  });
});

describe('a duration no timer can wait', () => {
  const hint = '  hint: a duration of 0 ends at once, and a Node timer cannot wait longer than 2^31-1 ms (about 24.8 days)';

  it('refuses 0, past 24 hours and past 2^31-1 ms, in either form, each at its line (every one in one load)', async () => {
    const defaults = lineOf('pipeline.yaml', '  timeout: 60s');
    const claude = lineOf('pipeline.yaml', '    timeout: 120s');
    const text = await loadEdited('pipeline.yaml', (yaml) =>
      yaml
        .replace('  timeout: 60s\n', '  timeout: 2147484s\n  claim_ttl: 99999999999m\n')
        .replace('    timeout: 120s\n', '    timeout: 0s\n    retry_after_cap: 86401\n'),
    );
    expect(text).toEqual([
      `pipeline.yaml:${defaults}:12: timeout must be between 1ms and 24 hours (1440m), got 2147484s\n${hint}`,
      `pipeline.yaml:${defaults + 1}:14: claim_ttl must be between 1ms and 24 hours (1440m), got 99999999999m\n${hint}`,
      `pipeline.yaml:${claude + 1}:14: timeout must be between 1ms and 24 hours (1440m), got 0s\n${hint}`,
      `pipeline.yaml:${claude + 2}:22: retry_after_cap must be between 1ms and 24 hours (1440m), got 86401\n${hint}`,
    ]);
  });

  it('refuses a negative number or less than a millisecond, and shows a ${VAR} as written and as it came out', async () => {
    const line = lineOf('pipeline.yaml', '  timeout: 60s');
    const text = await loadEdited('pipeline.yaml', (yaml) => yaml.replace('  timeout: 60s\n', '  timeout: ${T}\n  claim_ttl: -1\n'), { T: '0.5ms' });
    expect(text).toEqual([
      `pipeline.yaml:${line}:12: timeout must be between 1ms and 24 hours (1440m), got \${T} (0.5ms)\n${hint}`,
      `pipeline.yaml:${line + 1}:14: claim_ttl must be between 1ms and 24 hours (1440m), got -1\n${hint}`,
    ]);
  });

  it('takes 1ms, 1440m and 86400 (seconds), the bounds themselves', async () => {
    const text = await loadEdited('pipeline.yaml', (yaml) =>
      yaml.replace('  timeout: 60s\n', '  timeout: 1ms\n  claim_ttl: 1440m\n').replace('    timeout: 120s\n', '    timeout: 86400\n'),
    );
    expect(text).toEqual([]);
  });

  it('covers every key the schema types as a duration', () => {
    const schema = readFileSync(path.join(ROOT, 'schemas/config/pipeline.schema.json'), 'utf8');
    const keys = new Set(
      [...schema.matchAll(/"([a-z_]+)": \{\s*"\$ref": "#\/definitions\/(?:duration|providerCommon\/properties\/timeout)"/g)].map((match) => match[1]),
    );
    expect([...keys].sort()).toEqual([...new Set([...DURATION_KEYS.defaults, ...DURATION_KEYS.provider])].sort());
  });
});
