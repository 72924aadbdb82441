/**
 * SPEC §2: bad configuration gets a positioned error that says something true, never a crash:
 * absurdly nested `${…}` defaults, a variable named like a member of Object.prototype, and YAML's
 * .nan / .inf where a number belongs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configValidators } from '../../engine/config/config-schemas.js';
import { interpolate, InterpolationError, MAX_NESTING } from '../../engine/config/interpolate.js';
import { buildPipeline } from '../../engine/config/load.js';
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
