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
import { GLOBAL_OPTION_NAMES } from '../../engine/config/cross-check.js';
import { GLOBAL_OPTIONS } from '../../engine/cli/args.js';
import { setPath } from '../../engine/util/json-path.js';
import { editedPipeline, ROOT } from '../helpers.js';

async function loadEdited(file: string, edit: (text: string) => string, env: Record<string, string | undefined> = {}): Promise<string[]> {
  const dir = editedPipeline({ [file]: edit });
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

describe('what an effect may write, and field paths', () => {
  it('refuses an effect that writes the id, the status or the key, or a path through a name every object inherits, each at its line', async () => {
    const line = lineOf('machines/lesson.yaml', '    - { set: passed_at, to: { $now: true } }');
    const text = await loadEdited('machines/lesson.yaml', (yaml) =>
      yaml.replace(
        '    - { set: passed_at, to: { $now: true } }\n',
        [
          '    - { set: passed_at, to: { $now: true } }',
          '    - { set: id, to: 01M99NG84AJB72G40G4G0YBR62 }',
          '    - { remove: artifact_id }',
          '    - { snapshot: candidate, into: status }',
          '    - { set: __proto__.polluted, to: 1 }',
          '    - { increment: a..b }',
          '',
        ].join('\n'),
      ),
    );
    expect(text).toEqual([
      `machines/lesson.yaml:${line + 1}:14: an effect cannot set "id": the engine keeps the proposal's id\n  hint: keep what you need in a field of your own`,
      `machines/lesson.yaml:${line + 2}:17: an effect cannot remove "artifact_id": the engine keeps the proposal's key (pipeline.yaml proposal.key)\n  hint: keep what you need in a field of your own`,
      `machines/lesson.yaml:${line + 3}:36: an effect cannot write "status": the engine keeps the proposal's status, which only a transition's target sets\n  hint: keep what you need in a field of your own`,
      `machines/lesson.yaml:${line + 4}:14: set: "__proto__.polluted" names "__proto__", which every object inherits; it is never a field\n  hint: a field path is names joined by dots, e.g. candidate.applies_to`,
      `machines/lesson.yaml:${line + 5}:20: increment: "a..b" has an empty name between its dots\n  hint: a field path is names joined by dots, e.g. candidate.applies_to`,
    ]);
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });

  it('refuses a stage field path through __proto__, prototype or constructor', async () => {
    const line = lineOf('stages/promote.yaml', 'stamp: promoted_at');
    const text = await loadEdited('stages/promote.yaml', (yaml) => yaml.replace('stamp: promoted_at', 'stamp: pool.__proto__.at'));
    expect(text).toEqual([
      `stages/promote.yaml:${line}:8: stamp "pool.__proto__.at": a field path is dotted names, e.g. candidate.claim (never __proto__, prototype or constructor, which every object inherits)`,
    ]);
  });

  it('never lets setPath reach a prototype, whatever it is given', () => {
    const target: Record<string, unknown> = {};
    expect(() => setPath(target, '__proto__.polluted', 1)).toThrow(/__proto__ is never a field/);
    expect(() => setPath(target, 'a.__proto__', 1)).toThrow(/__proto__ is never a field/);
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
    // `constructor` on a plain document is its own field, not the inherited function.
    setPath(target, 'constructor.name', 'x');
    expect(target).toEqual({ constructor: { name: 'x' } });
  });
});

describe('a judge stage whose verdicts lead apart', () => {
  it('refuses pass and fail naming one event, or two events that lead to the same state', async () => {
    const line = lineOf('stages/judge.yaml', 'events: { pass: approve, fail: reject }');
    const same = await loadEdited('stages/judge.yaml', (yaml) => yaml.replace('fail: reject }', 'fail: approve }'));
    expect(same).toEqual([
      `stages/judge.yaml:${line}:32: pass and fail are both "approve": a failing verdict would lead where a passing one does ("approved")\n  hint: give fail an event that leads to another state (e.g. reject → rejected)`,
    ]);
    const converging = await loadEdited('machines/lesson.yaml', (yaml) => yaml.replace(/( {6}reject:\n {8}target: )rejected/, '$1approved'));
    // One event whose guards route by the verdict is not refused: a guard may read `args.verdict.passed`.
    const dir = editedPipeline({
      'machines/lesson.yaml': (yaml) =>
        yaml
          .replace(
            '      reject:\n        target: rejected\n',
            '      decide:\n        - { target: approved, guard: verdict_passed, actions: [record_verdict] }\n        - { target: rejected, actions: [record_verdict] }\n      reject:\n        target: rejected\n',
          )
          .replace(
            'guards:\n',
            'guards:\n  verdict_passed:\n    message: the verdict did not pass\n    schema: { properties: { args: { properties: { verdict: { properties: { passed: { const: true } } } } } } }\n',
          ),
      'stages/judge.yaml': (yaml) => yaml.replace('events: { pass: approve, fail: reject }', 'events: { pass: decide, fail: decide }'),
    });
    const routed = buildPipeline(dir, readConfigTexts(dir, {}), {}, await configValidators(), { full: true }).issues.filter(
      (issue) => issue.severity === 'error',
    );
    expect(routed.map(formatIssue)).toEqual([]);
    expect(converging).toContainEqual(
      expect.stringMatching(
        /^stages\/judge\.yaml:\d+:32: "approve" and "reject" both lead from "confirmed" to "approved": a failing verdict would lead where a passing one does\n/,
      ),
    );
  });
});

describe('review arguments as a command line gives them', () => {
  it('refuses an argument spelled as a global option or as another argument, a name no option can have, and a type one value cannot hold', async () => {
    const line = lineOf('stages/review.yaml', '      visibility:');
    const text = await loadEdited('stages/review.yaml', (yaml) =>
      yaml.replace(
        '      visibility:\n',
        [
          '      dir: { type: string }',
          '      the_note: { type: string }',
          '      the-note: { type: string }',
          '      "two words": {}',
          '      tags: { type: array }',
          '      visibility:',
          '',
        ].join('\n'),
      ),
    );
    expect(text).toEqual([
      `stages/review.yaml:${line}:7: argument "dir" would be --dir, the global option\n  hint: give it another name`,
      `stages/review.yaml:${line + 2}:7: arguments "the_note" and "the-note" would both be --the-note\n  hint: give one of them another name`,
      `stages/review.yaml:${line + 3}:7: argument "two words": a name is a letter followed by letters, digits, _ or -`,
      `stages/review.yaml:${line + 4}:21: argument "tags" is of type "array": a command line gives it one value, read as string, number, integer or boolean`,
    ]);
  });

  it('knows the global options the command line has', () => {
    expect([...GLOBAL_OPTION_NAMES].sort()).toEqual(Object.keys(GLOBAL_OPTIONS).sort());
  });
});

describe('a JSON Schema file', () => {
  it('with a key given twice is an error at the second (JSON.parse would keep the last, silently)', async () => {
    const text = await loadEdited('schemas/confirmed-proposal.schema.json', (json) => json.replace('"properties": {', '"required": [],\n  "properties": {'));
    const line = lineOf('schemas/confirmed-proposal.schema.json', '"required"');
    expect(text).toEqual([
      `schemas/confirmed-proposal.schema.json:${line + 1}:3: key "required" appears twice in the same map (first on line ${line})\n  hint: keep one of them`,
    ]);
  });

  it('may start with a byte-order mark, as a YAML file may', async () => {
    expect(await loadEdited('schemas/confirmed.schema.json', (json) => `\ufeff${json}`)).toEqual([]);
  });

  it('that breaks the meta-schema is an error at the keyword, in ajv’s words', async () => {
    const text = await loadEdited('schemas/confirmed.schema.json', (json) => json.replace('"type": "object",', '"type": "objekt",'));
    const line = lineOf('schemas/confirmed.schema.json', '"type": "object",');
    expect(text).toEqual([
      expect.stringMatching(
        new RegExp(`^schemas/confirmed\\.schema\\.json:${line}:11: invalid JSON Schema: .*type must be equal to one of the allowed values`),
      ),
    ]);
  });
});

describe('where a store keeps things', () => {
  it('refuses prune receipts kept among the pool entries, and two ledgers in one file', async () => {
    const receipts = await loadEdited('pipeline.yaml', (yaml) => yaml.replace('receipts: prune-receipts', 'receipts: approved'));
    expect(receipts).toEqual([
      expect.stringMatching(
        /^pipeline\.yaml:\d+:\d+: "approved" holds the pool's entries: a receipt there would be read as one\n {2}hint: keep receipts in a directory of their own, e.g. prune-receipts$/,
      ),
    ]);
    const line = lineOf('pipeline.yaml', '  passed: passed.jsonl');
    const shared = await loadEdited('pipeline.yaml', (yaml) => yaml.replace('  passed: passed.jsonl', '  passed: declined.jsonl'));
    expect(shared).toEqual([`pipeline.yaml:${line}:11: ledgers "declined" and "passed" are both declined.jsonl\n  hint: give each ledger a file of its own`]);
  });
});

describe('shapes a person gets wrong', () => {
  it('a duration in hours is told what a duration is, not a regular expression', async () => {
    const line = lineOf('pipeline.yaml', '  timeout: 60s');
    expect(await loadEdited('pipeline.yaml', (yaml) => yaml.replace('  timeout: 60s', '  timeout: 1h'))).toEqual([
      `pipeline.yaml:${line}:12: timeout "1h": a duration is a number of seconds or a string like 500ms, 30s or 2m (no h: 1h is 60m)`,
    ]);
  });

  it('an effect of no known shape lists every shape, increment and move included', async () => {
    const text = await loadEdited('machines/lesson.yaml', (yaml) =>
      yaml.replace('    - { set: passed_at, to: { $now: true } }\n', '    - { set: passed_at, to: { $now: true } }\n    - { sett: x }\n'),
    );
    expect(text.join('\n')).toContain('{increment, by?}');
    expect(text.join('\n')).toContain('{move, to}');
  });
});

describe('review found in the fixes (helper 60)', () => {
  it('refuses a move into or out of a directory the store reserves, and proposal fields that overlap', async () => {
    const moved = await loadEdited('machines/lesson.yaml', (yaml) => yaml.replace('{ move: approved, to: archived }', '{ move: approved, to: proposals }'));
    expect(moved).toEqual([expect.stringMatching(/^machines\/lesson\.yaml:\d+:\d+: "proposals" is reserved by the store, not a collection of entries\n/)]);
    const line = lineOf('pipeline.yaml', '  payload: candidate');
    const fields = await loadEdited('pipeline.yaml', (yaml) =>
      yaml.replace('  payload: candidate', '  payload: status').replace('  created: created_at', '  created: artifact_id'),
    );
    expect(fields).toEqual([
      `pipeline.yaml:${line}:12: proposal.payload "status" is the status's field too\n  hint: name a field of its own`,
      expect.stringMatching(/^pipeline\.yaml:\d+:12: proposal\.created "artifact_id" is proposal\.key's field too\n/),
    ]);
  });
});
