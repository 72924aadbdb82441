/**
 * SPEC §2 and §9: malformed YAML gives a clear error and loses nothing. Random damage to any file
 * of a copy of the shipped pipeline — see ./mutations.ts — must either still load or be reported
 * as errors that each name a file, a line and a column; never an exception, never a stack trace.
 * Checked through the pure loader (buildPipeline over readConfigTexts) for many cases, and through
 * the real `pipeline validate` for a few. FUZZ_SEED and FUZZ_RUNS explore further.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { configValidators, type ConfigValidators } from '../../engine/config/config-schemas.js';
import { buildPipeline } from '../../engine/config/build.js';
import { readConfigTexts } from '../../engine/config/read.js';
import { formatIssue } from '../../engine/errors.js';
import { BIN, copyPipeline, SECRET_FILE } from '../helpers.js';
import { applyMutation, mutation, type Mutation } from './mutations.js';

const FILES = [
  'pipeline.yaml',
  'machines/lesson.yaml',
  'stages/transform.yaml',
  'stages/review.yaml',
  'stages/judge.yaml',
  'stages/promote.yaml',
  'rubrics/lesson-promotion.yaml',
  'rubrics/lesson-promotion-public.yaml',
  'schemas/candidate.schema.json',
  'schemas/confirmed.schema.json',
];
const seed = Number(process.env['FUZZ_SEED'] ?? 20261130);
const numRuns = Number(process.env['FUZZ_RUNS'] ?? 120);
const env = { ...process.env, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE, PIPELINE_CONFIG_CACHE: 'off' };
const damage = fc.tuple(fc.constantFrom(...FILES), fc.array(mutation, { minLength: 1, maxLength: 3 }));
type Damage = [string, Mutation[]];

// "Billion laughs": each level names the one before ten times.
const ALIAS_BOMB = [
  'a: &a [x, x, x, x, x, x, x, x, x, x]',
  'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
  'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
  'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
].join('\n');
/** Cases the fuzzer found once, kept so every run checks them: aliases that resolve to nothing or to too much. */
const FOUND: Damage[] = [
  ['pipeline.yaml', [{ kind: 'retype_value', at: 0, value: '*nowhere' }]],
  ['rubrics/lesson-promotion.yaml', [{ kind: 'retype_value', at: 0.5, value: '*nowhere' }]],
  [
    'pipeline.yaml',
    [
      { kind: 'truncate', at: 0 },
      { kind: 'insert_text', at: 0, text: '<<: *a' },
    ],
  ],
  ['pipeline.yaml', [{ kind: 'insert_text', at: 0, text: `${ALIAS_BOMB}\n` }]],
  ['rubrics/lesson-promotion-public.yaml', [{ kind: 'insert_text', at: 0, text: `${ALIAS_BOMB}\n` }]],
];

let validators: ConfigValidators;
beforeAll(async () => {
  validators = await configValidators();
});

/** Write the damaged file into `dir` (a copy of the shipped pipeline) and return a restore function. */
function damageFile(dir: string, file: string, mutations: Mutation[]): () => void {
  const target = path.join(dir, file);
  const original = readFileSync(target);
  writeFileSync(target, mutations.reduce(applyMutation, original));
  return () => writeFileSync(target, original);
}

describe('fuzzed configuration', () => {
  it('loads, or reports errors that each carry file, line and column — and never throws', () => {
    const dir = copyPipeline();
    let rejected = 0;
    fc.assert(
      fc.property(damage, ([file, mutations]) => {
        const restore = damageFile(dir, file, mutations);
        try {
          const result = buildPipeline(dir, readConfigTexts(dir, env), env, validators, { full: true });
          const errors = result.issues.filter((issue) => issue.severity === 'error');
          if (result.pipeline) expect(errors).toEqual([]);
          else {
            rejected++;
            expect(errors.length).toBeGreaterThan(0);
          }
          for (const issue of result.issues) {
            expect(issue, formatIssue(issue)).toEqual(expect.objectContaining({ file: expect.any(String), line: expect.any(Number), col: expect.any(Number) }));
            expect(issue.line! >= 1 && issue.col! >= 1, formatIssue(issue)).toBe(true);
            expect(issue.message.trim(), formatIssue(issue)).not.toBe('');
          }
        } finally {
          restore();
        }
      }),
      { seed, numRuns, examples: FOUND.map((found) => [found]) },
    );
    // Most random damage breaks something; a fuzzer that never produced an error tested nothing.
    expect(rejected).toBeGreaterThan(numRuns / 4);
  }, 120_000);

  it('makes `pipeline validate` exit 0 or 1 with positioned messages, never an internal error or a stack', () => {
    const dir = copyPipeline();
    for (const [file, mutations] of [...FOUND.slice(0, 2), ...fc.sample(damage, { seed, numRuns: 8 })]) {
      const restore = damageFile(dir, file, mutations);
      try {
        const result = spawnSync(process.execPath, [BIN, '--dir', dir, 'validate'], { env, encoding: 'utf8', timeout: 60_000 });
        const what = `${file} after ${JSON.stringify(mutations)}:\n${result.stderr}`;
        expect([0, 1], what).toContain(result.status);
        expect(result.stderr, what).not.toMatch(/internal error|^\s+at .+:\d+:\d+\)?$/m);
        if (result.status === 0) expect(result.stdout, what).toMatch(/^ok\b/);
        else expect(result.stderr, what).toMatch(/^[\w./-]+\.(ya?ml|json):\d+:\d+: /m);
      } finally {
        restore();
      }
    }
  }, 120_000);
});
