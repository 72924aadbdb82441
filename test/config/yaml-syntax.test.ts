/**
 * YAML syntax errors point at the line that is wrong and say what is wrong in plain words —
 * indentation, a tab, a bracket, quote or `${` left open — and do not cascade into errors on
 * every later line the parser misread.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatIssue } from '../../engine/errors.js';
import { parseSource } from '../../engine/config/source.js';
import { copyPipeline, ROOT } from '../helpers.js';
import { runIn } from '../cli/memory-io.js';

/** The issues of a YAML text, formatted as validate prints them. */
function problems(text: string): string {
  return parseSource('f.yaml', text).issues.map(formatIssue).join('\n');
}

/** A shipped file with one line indented two spaces more. */
function overIndented(file: string, line: number): string {
  return readFileSync(path.join(ROOT, file), 'utf8')
    .split('\n')
    .map((text, index) => (index === line - 1 ? `  ${text}` : text))
    .join('\n');
}

describe('an over-indented line', () => {
  it('is blamed on itself, once — not on every later sibling (machines/lesson.yaml line 15)', () => {
    const issues = parseSource('machines/lesson.yaml', overIndented('machines/lesson.yaml', 15)).issues;
    expect(issues.map(formatIssue).join('\n')).toMatchInlineSnapshot(`
      "machines/lesson.yaml:15:1: this line is indented 8 spaces, but line 21, a key of the same map, is indented 6 spaces: the keys of one map start at the same column
        hint: indent line 15 like line 21 (6 spaces), or the other way round"
    `);
  });

  it('below a key that already has a value: names that line', () => {
    expect(problems(overIndented('stages/review.yaml', 15))).toMatchInlineSnapshot(`
      "f.yaml:15:1: this line is indented 6 spaces, deeper than line 14, whose key already has a value on its line
        hint: indent it like its siblings (4 spaces, as on line 14), or move the value of line 14 below it"
    `);
    expect(problems('a: "x"\n  b: 1\n')).toMatchInlineSnapshot(`
      "f.yaml:2:1: this line is indented 2 spaces, deeper than line 1, whose key already has a value on its line
        hint: indent it like its siblings (no indentation, as on line 1), or move the value of line 1 below it"
    `);
  });

  it('the first key of a map deeper than the next one (pipeline.yaml line 15)', () => {
    expect(problems(overIndented('pipeline.yaml', 15))).toMatchInlineSnapshot(`
      "f.yaml:15:1: this line is indented 4 spaces, but line 16, a key of the same map, is indented 2 spaces: the keys of one map start at the same column
        hint: indent line 15 like line 16 (2 spaces), or the other way round"
    `);
  });

  it('an indented first line', () => {
    expect(problems('  a: 1\nb: 2\n')).toMatchInlineSnapshot(`
      "f.yaml:1:1: the first key is indented 2 spaces, deeper than line 2: the top level of a file starts at column 1
        hint: remove the indentation of the top-level keys"
    `);
  });
});

describe('other syntax errors, in plain words', () => {
  it('a tab used for indentation', () => {
    expect(problems('a:\n  b: 1\n\tc: 2\n')).toMatchInlineSnapshot(`
      "f.yaml:3:1: this line is indented with a tab; YAML indents with spaces only
        hint: replace the tab with spaces"
    `);
  });

  it('a bracket, a brace or a quote that is never closed: points at where it was opened', () => {
    expect(problems('a:\n  b: [1, 2\n  c: 3\nd: 4\n')).toMatchInlineSnapshot(`
      "f.yaml:2:6: the [ opened here is never closed
        hint: end the list with ] (on this line, or indented deeper than its key)"
    `);
    expect(problems('a: {x: 1\nb: 3\n')).toMatchInlineSnapshot(`
      "f.yaml:1:4: the { opened here is never closed
        hint: end the map with } (on this line, or indented deeper than its key)"
    `);
    expect(problems('a: "abc\nb: 2\n')).toMatchInlineSnapshot(`
      "f.yaml:1:4: the " opened here is never closed
        hint: end the string with " (on this line, or indented deeper than its key)"
    `);
    expect(problems("a: 'it''s\nb: 2\n")).toMatchInlineSnapshot(`
      "f.yaml:1:4: the ' opened here is never closed
        hint: end the string with ' (on this line, or indented deeper than its key)"
    `);
  });

  it('ignores brackets and quotes in comments, block scalars and inside words', () => {
    expect(problems('a: x[1] # [ not a list\nb: |\n  text with [ and "\nc: it\'s\nd: [1, 2\n')).toMatchInlineSnapshot(`
      "f.yaml:5:4: the [ opened here is never closed
        hint: end the list with ] (on this line, or indented deeper than its key)"
    `);
  });

  it('a closing bracket that closes nothing, and a colon without its space', () => {
    expect(problems('a: [1, 2]]\n')).toMatchInlineSnapshot(`
      "f.yaml:1:10: this ] closes nothing: no [ is open here
        hint: remove it, or open the list it closes"
    `);
    expect(problems('a:1\nb: 2\n')).toMatchInlineSnapshot(`
      "f.yaml:1:1: a key needs a space after its colon
        hint: write "key: value", not "key:value""
    `);
  });

  it('duplicate keys are each reported', () => {
    expect(problems('a: 1\nb: 2\na: 3\nb: 4\n')).toMatchInlineSnapshot(`
      "f.yaml:3:1: key "a" appears twice in the same map (first on line 1)
        hint: keep one of them
      f.yaml:4:1: key "b" appears twice in the same map (first on line 2)
        hint: keep one of them"
    `);
  });
});

describe('pipeline validate on a broken file', () => {
  it('reports one positioned error for the over-indented line, and an unclosed ${ in plain words', async () => {
    const dir = copyPipeline();
    writeFileSync(path.join(dir, 'machines', 'lesson.yaml'), overIndented('machines/lesson.yaml', 15));
    const stage = path.join(dir, 'stages', 'transform.yaml');
    writeFileSync(stage, readFileSync(stage, 'utf8').replace('dir: examples/artifacts', 'dir: ${ARTIFACTS:-examples/artifacts'));
    const ran = await runIn(['validate', '--dir', dir], {});
    expect(ran.code).toBe(1);
    expect(ran.stderr.replaceAll(dir, '<dir>')).toMatchInlineSnapshot(`
      "machines/lesson.yaml:15:1: this line is indented 8 spaces, but line 21, a key of the same map, is indented 6 spaces: the keys of one map start at the same column
        hint: indent line 15 like line 21 (6 spaces), or the other way round
      stages/transform.yaml:10:8: the "\${" in "\${ARTIFACTS:-examples/artifacts" is never closed
        hint: close it with "}", or write "$\${" for a literal "\${"
      error: invalid configuration (2 errors) in <dir>
      "
    `);
  });
});

describe('brackets nested thousands deep', () => {
  it('are said to be nested too deep, at the line, never with the parser’s stack overflow or a hint about indentation', () => {
    const issues = parseSource('rubrics/x.yaml', `id: x\nextra: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`).issues;
    expect(issues.map(formatIssue)).toEqual([
      'rubrics/x.yaml:2:' +
        String(issues[0]?.col) +
        ': nested too deep to read (thousands of levels of brackets or blocks)\n  hint: no configuration nests more than a few levels',
    ]);
    expect(issues[0]!.line).toBe(2);
  });
});
