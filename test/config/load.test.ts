/**
 * SPEC §2: every configuration file validated against its schema, errors with file:line:col, the
 * offending value and a hint, all of them at once; interpolation; cross-file rules; warnings.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configValidators } from '../../engine/config/config-schemas.js';
import { buildPipeline } from '../../engine/config/build.js';
import { readConfigTexts } from '../../engine/config/read.js';
import { formatIssue } from '../../engine/errors.js';
import { ORG_RUBRIC, PUBLIC_RUBRIC } from '../fixtures/rubrics.js';
import { copyPipeline, editedPipeline, ROOT } from '../helpers.js';

async function load(dir: string, env: Record<string, string | undefined> = {}) {
  const { pipeline, issues } = buildPipeline(dir, readConfigTexts(dir, env), env, await configValidators(), { full: true });
  return { pipeline, issues, text: issues.map(formatIssue) };
}

/** A copy of the shipped pipeline with `file` edited by `edit`; the loaded issues as text. */
async function withEdit(edits: Record<string, (text: string) => string>, env: Record<string, string | undefined> = {}) {
  return load(editedPipeline(edits), env);
}

const lineOf = (file: string, needle: string) =>
  readFileSync(path.join(ROOT, file), 'utf8')
    .split('\n')
    .findIndex((line) => line.includes(needle)) + 1;

describe('the shipped configuration', () => {
  it('loads with no error and no warning', async () => {
    const { pipeline, issues } = await load(ROOT);
    expect(issues).toEqual([]);
    expect(pipeline?.stages.map((stage) => `${stage.name}:${stage.kind}`)).toEqual(['transform:transform', 'review:review', 'judge:judge', 'promote:promote']);
  });

  it('ships the rubric values of the reference design verbatim', async () => {
    const { pipeline } = await load(ROOT);
    // The literals live in test/fixtures/rubrics.ts, which the jury's pure tests use too: this pins both to the YAML.
    expect(pipeline!.rubrics.get('lesson-promotion')).toEqual(ORG_RUBRIC);
    expect(pipeline!.rubrics.get('lesson-promotion-public')).toEqual(PUBLIC_RUBRIC);
  });

  it('references its schema from every shipped YAML file', () => {
    for (const file of [
      'pipeline.yaml',
      'machines/lesson.yaml',
      'stages/transform.yaml',
      'stages/review.yaml',
      'stages/judge.yaml',
      'stages/promote.yaml',
      'rubrics/lesson-promotion.yaml',
      'rubrics/lesson-promotion-public.yaml',
    ]) {
      expect(readFileSync(path.join(ROOT, file), 'utf8')).toMatch(/^# yaml-language-server: \$schema=\S+\.schema\.json/);
    }
  });
});

describe('positioned errors', () => {
  it('reports a weight sum as written in the file, at the criteria key', async () => {
    const { text } = await withEdit({ 'rubrics/lesson-promotion-public.yaml': (yaml) => yaml.replace('weight: 0.24', 'weight: 0.25') });
    const line = lineOf('rubrics/lesson-promotion-public.yaml', 'criteria:');
    expect(text).toEqual([`rubrics/lesson-promotion-public.yaml:${line}:1: criterion weights sum to 1.01, expected 1.00 (0.32 + 0.25 + 0.14 + 0.30)`]);
  });

  it('quotes a wrong kind with the allowed ones, at the value', async () => {
    const { text } = await withEdit({ 'stages/judge.yaml': (yaml) => yaml.replace('kind: judge', 'kind: jduge') });
    const line = lineOf('stages/judge.yaml', 'kind: judge');
    expect(text).toEqual([`stages/judge.yaml:${line}:7: unknown kind "jduge" (expected transform, review, judge or promote)\n  hint: did you mean "judge"?`]);
  });

  it('reports every error of one load, across files', async () => {
    const { text } = await withEdit({
      'rubrics/lesson-promotion.yaml': (yaml) =>
        yaml.replace('score_threshold: 0.75', 'score_threshold: 1.5').replace('gate_policy: majority', 'gate_policy: plurality'),
      'stages/review.yaml': (yaml) => yaml.replace('title: candidate.claim', 'titel: candidate.claim'),
    });
    expect(text).toHaveLength(3);
    expect(text.join('\n')).toMatch(/rubrics\/lesson-promotion\.yaml:\d+:18: score_threshold must be between 0 and 1, got 1\.5/);
    expect(text.join('\n')).toMatch(/rubrics\/lesson-promotion\.yaml:\d+:14: unknown gate_policy "plurality" \(expected majority or unanimous\)/);
    expect(text.join('\n')).toMatch(/stages\/review\.yaml:\d+:1: unknown key "titel"\n {2}hint: did you mean "title"\?/);
  });

  it('positions YAML syntax errors and duplicate keys', async () => {
    const broken = await withEdit({ 'stages/promote.yaml': (yaml) => yaml.replace('stamp: promoted_at', 'stamp: [promoted_at') });
    expect(broken.text[0]).toMatch(/^stages\/promote\.yaml:\d+:\d+: /);
    const duplicate = await withEdit({ 'rubrics/lesson-promotion.yaml': (yaml) => `${yaml}score_threshold: 0.8\n` });
    expect(duplicate.text[0]).toMatch(/^rubrics\/lesson-promotion\.yaml:\d+:1: key "score_threshold" appears twice in the same map \(first on line \d+\)/);
  });

  it.each([
    ['a weight above 1', (yaml: string) => yaml.replace('weight: 0.45', 'weight: 1.45'), /weight must be between 0 and 1, got 1\.45/],
    ['a floor below 0', (yaml: string) => yaml.replace('min_pass: 0.6', 'min_pass: -0.1'), /min_pass must be between 0 and 1, got -0\.1/],
    ['a duplicate criterion', (yaml: string) => yaml.replace('name: generality', 'name: grounding'), /duplicate name "grounding" in criteria/],
    ['an empty panel', (yaml: string) => yaml.replace('judge_types: [standard, adversarial]', 'judge_types: []'), /judge_types must not be empty/],
    ['a retry knob', (yaml: string) => `${yaml}max_iterations: 1\n`, /unknown key "max_iterations"/],
    [
      'coverage above 1',
      (yaml: string) => yaml.replace('min_criterion_coverage: 0.6', 'min_criterion_coverage: 2'),
      /min_criterion_coverage must be between 0 and 1, got 2/,
    ],
  ])('refuses a rubric with %s', async (_name, edit, message) => {
    const { text } = await withEdit({ 'rubrics/lesson-promotion.yaml': edit });
    expect(text.join('\n')).toMatch(message);
    expect(text[0]).toMatch(/^rubrics\/lesson-promotion\.yaml:\d+:\d+: /);
  });

  it('defaults min_criterion_coverage to 0.6', async () => {
    const { pipeline } = await withEdit({ 'rubrics/lesson-promotion.yaml': (yaml) => yaml.replace('min_criterion_coverage: 0.6\n', '') });
    expect(pipeline!.rubrics.get('lesson-promotion')!.min_criterion_coverage).toBe(0.6);
  });
});

describe('interpolation', () => {
  it('substitutes ${VAR} and ${VAR:-default}, nested, and $${ as a literal', async () => {
    const { pipeline } = await withEdit(
      { 'pipeline.yaml': (yaml) => yaml.replace('name: lesson-promotion', () => 'name: ${PIPE_NAME}-$${x}-${UNSET_ONE:-${PIPE_FALLBACK:-deep}}') },
      { PIPE_NAME: 'lessons' },
    );
    expect(pipeline!.def.name).toBe('lessons-${x}-deep');
  });

  it('positions an unset variable with no default', async () => {
    const { text } = await withEdit({ 'stages/transform.yaml': (yaml) => yaml.replace('dir: examples/artifacts', 'dir: ${ARTIFACT_DIR}') });
    const line = lineOf('stages/transform.yaml', 'dir: examples/artifacts');
    expect(text).toEqual([
      `stages/transform.yaml:${line}:8: environment variable ARTIFACT_DIR is not set\n  hint: set the variable, or give a default with \${NAME:-default}`,
    ]);
  });

  it('leaves prompt templates ({{path}}) alone', async () => {
    const { pipeline } = await load(ROOT);
    const judge = pipeline!.stages.find((stage) => stage.kind === 'judge');
    expect(judge?.kind === 'judge' && judge.prompts?.['standard']).toContain('{{criteria}}');
  });
});

describe('cross-file rules', () => {
  it.each([
    [
      'a review command naming an unknown event',
      { 'stages/review.yaml': (yaml: string) => yaml.replace('event: defer', 'event: postpone') },
      /stages\/review\.yaml:\d+:\d+: unknown event "postpone"/,
    ],
    [
      'a judge stage naming an unknown rubric',
      { 'stages/judge.yaml': (yaml: string) => yaml.replace('org: lesson-promotion', 'org: lesson-promo') },
      /stages\/judge\.yaml:\d+:\d+: unknown rubric "lesson-promo"\n {2}hint: did you mean "lesson-promotion"\?/,
    ],
    [
      'a judge type with no provider',
      { 'rubrics/lesson-promotion.yaml': (yaml: string) => yaml.replace('[standard, adversarial]', '[standard, adversarial, skeptic]') },
      /rubrics\/lesson-promotion\.yaml:\d+:\d+: judge type "skeptic" has no provider in stages\/judge\.yaml/,
    ],
    [
      'a judge mapped to an unknown provider',
      { 'stages/judge.yaml': (yaml: string) => yaml.replace('standard: standard-checks', 'standard: standard-chekcs') },
      /unknown provider "standard-chekcs"\n {2}hint: did you mean "standard-checks"\?/,
    ],
    [
      'an unknown guard',
      { 'machines/lesson.yaml': (yaml: string) => yaml.replace('guard: jury_checks_independence', 'guard: jury_check') },
      /machines\/lesson\.yaml:\d+:16: unknown guard "jury_check"/,
    ],
    [
      'an unknown effect',
      { 'machines/lesson.yaml': (yaml: string) => yaml.replace('actions: [record_pass]', 'actions: [record_passing]') },
      /unknown effect "record_passing"\n {2}hint: did you mean "record_pass"\?/,
    ],
    ['an unknown target state', { 'machines/lesson.yaml': (yaml: string) => yaml.replace('target: passed', 'target: pased') }, /unknown state "pased"/],
    [
      'an unreachable state',
      {
        'machines/lesson.yaml': (yaml: string) =>
          yaml.replace('  approved:\n    description', '  limbo:\n    description: nowhere\n  approved:\n    description'),
      },
      /state "limbo" cannot be reached from the initial state "pending"/,
    ],
    [
      'a review command shadowing a built-in',
      { 'stages/review.yaml': (yaml: string) => yaml.replace('  defer:\n    event: defer', '  status:\n    event: defer') },
      /review command "status" clashes with the built-in command/,
    ],
    [
      'a ledger that is not declared',
      { 'stages/transform.yaml': (yaml: string) => yaml.replace('ledger: declined', 'ledger: refused') },
      /unknown ledger "refused"/,
    ],
    [
      'an unknown expression operator',
      { 'stages/promote.yaml': (yaml: string) => yaml.replace('$count: verdict.judges }', '$cnt: verdict.judges }') },
      /unknown expression operator "\$cnt"/,
    ],
    [
      'a ledger named like the audit log',
      { 'pipeline.yaml': (yaml: string) => yaml.replace('passed: passed.jsonl', 'passed: events.jsonl') },
      /pipeline\.yaml:\d+:\d+: "events\.jsonl" is the audit log's name/,
    ],
    [
      'a criterion named __proto__',
      { 'rubrics/lesson-promotion.yaml': (yaml: string) => yaml.replace('name: generality', 'name: __proto__') },
      /rubrics\/lesson-promotion\.yaml:\d+:\d+: /,
    ],
    [
      'a move to something that is not a collection',
      { 'machines/lesson.yaml': (yaml: string) => yaml.replace('{ move: approved, to: archived }', '{ move: approved, to: [archived] }') },
      /machines\/lesson\.yaml:\d+:\d+: a move's to names a collection \(lower-case letters, digits, _ or -\), got \["archived"\]/,
    ],
    [
      'a promote row whose key is not a field of the row',
      { 'stages/promote.yaml': (yaml: string) => yaml.replace('    key: id\n', '    key: lesson\n') },
      /stages\/promote\.yaml:\d+:\d+: key "lesson" is not a field of the row/,
    ],
    [
      'a promote row whose key does not hold the proposal id (the stores would tell records apart differently)',
      { 'stages/promote.yaml': (yaml: string) => yaml.replace('    key: id\n', '    key: artifact_id\n') },
      /stages\/promote\.yaml:\d+:\d+: key "artifact_id" must name the row field that holds the proposal's id \(\{ \$field: id \}\), so that a record is never written twice for a proposal: here that is key: id/,
    ],
    [
      'nested states',
      { 'machines/lesson.yaml': (yaml: string) => yaml.replace('  passed:\n    description:', '  passed:\n    states: { inner: {} }\n    description:') },
      /nested states are not supported/,
    ],
  ])('refuses %s, with its position', async (_name, edits, message) => {
    const { text, pipeline } = await withEdit(edits);
    expect(pipeline).toBeUndefined();
    expect(text.join('\n')).toMatch(message);
  });

  it('gives no empty list of events for a judge stage from an unknown state, and says when a known state has none', async () => {
    const line = lineOf('stages/judge.yaml', 'from: confirmed');
    const events = lineOf('stages/judge.yaml', 'events: { pass');
    const unknown = await withEdit({ 'stages/judge.yaml': (yaml) => yaml.replace('from: confirmed', 'from: nowhere') });
    expect(unknown.text).toEqual([
      `stages/judge.yaml:${line}:7: unknown state "nowhere"\n  hint: states: pending, confirmed, passed, approved, rejected, archived`,
      expect.stringMatching(new RegExp(`^stages/judge\\.yaml:${events}:\\d+: state "nowhere" has no "approve" transition$`)),
      expect.stringMatching(new RegExp(`^stages/judge\\.yaml:${events}:\\d+: state "nowhere" has no "reject" transition$`)),
    ]);
    const final = await withEdit({ 'stages/judge.yaml': (yaml) => yaml.replace('from: confirmed', 'from: rejected') });
    expect(final.text).toContain(
      `stages/judge.yaml:${events}:17: state "rejected" has no "approve" transition\n  hint: "rejected" has no outgoing transitions`,
    );
  });

  it('warns (without failing) when unanimous cannot differ from majority at its panel size', async () => {
    const { pipeline, issues } = await withEdit({ 'rubrics/lesson-promotion.yaml': (yaml) => yaml.replace('gate_policy: majority', 'gate_policy: unanimous') });
    expect(pipeline).toBeDefined();
    expect(issues.map((issue) => [issue.severity, formatIssue(issue)])).toEqual([
      ['warning', expect.stringMatching(/rubrics\/lesson-promotion\.yaml:\d+:14: unanimous on a panel of 2 cannot differ from majority/)],
    ]);
  });

  it('names a stage file that cannot be read on the line of pipeline.yaml that lists it', async () => {
    const { text } = await withEdit({ 'pipeline.yaml': (yaml) => yaml.replace('- stages/promote.yaml', '- stages/promotion.yaml') });
    expect(text.join('\n')).toMatch(/^pipeline\.yaml:\d+:5: cannot read stages\/promotion\.yaml: file not found/m);
  });
});
