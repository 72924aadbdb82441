/**
 * The generic engine where a pipeline's own names meet JavaScript's and the file system's:
 * an event named like a property every object inherits, review arguments of a declared type,
 * a status or a source's text that names such a property, and configuration files that are not
 * UTF-8 text or not files at all (SPEC §2, §3, §5.3, §12).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../engine/expr/evaluate.js';
import { promote } from '../../engine/stages/promote.js';
import { runIn } from '../cli/memory-io.js';
import { copyPipeline, editedPipeline, proposalInput, proposalJson, storedOf, tempDir, testEngine } from '../helpers.js';

async function proposed(dir: string, store: string): Promise<string> {
  const created = await runIn(['--dir', dir, '--store', store, 'propose', '-'], {}, { input: JSON.stringify(proposalInput()) });
  expect(created.code).toBe(0);
  return created.stdout.trim();
}

describe('an event named like a property every object inherits', () => {
  it('"constructor" is an event like any other: it validates, and a review command takes a proposal through it', async () => {
    const dir = editedPipeline({
      'machines/lesson.yaml': (yaml) =>
        yaml.replace('      unconfirm:\n        target: pending\n', '      constructor:\n        target: pending\n      unconfirm:\n        target: pending\n'),
      'stages/review.yaml': (yaml) => yaml.replace('  defer:\n', '  takeback:\n    event: constructor\n  defer:\n'),
    });
    const store = path.join(tempDir(), 'store');
    expect(await runIn(['--dir', dir, 'validate'], {})).toMatchObject({ code: 0 });
    const id = await proposed(dir, store);
    expect(await runIn(['--dir', dir, '--store', store, 'confirm', id, '--visibility', 'org'], {})).toMatchObject({ code: 0 });
    const back = await runIn(['--dir', dir, '--store', store, 'takeback', id], {});
    expect(back).toMatchObject({ code: 0, stderr: '' });
    expect(proposalJson(store, id)['status']).toBe('pending');
  });
});

describe('review arguments of a declared type', () => {
  const dir = () =>
    editedPipeline({
      'stages/review.yaml': (yaml) =>
        yaml.replace(
          "      reason: { type: string, description: 'why, in a few words', examples: [not worth sharing] }\n",
          "      reason: { type: string, description: 'why, in a few words', examples: [not worth sharing] }\n      urgent: { type: boolean }\n      priority: { type: integer, minimum: 1 }\n      weight: { type: number }\n",
        ),
    });

  it('reads true/false, a whole number and a number from the command line, and shows them in the usage', async () => {
    const pipelineDir = dir();
    const store = path.join(tempDir(), 'store');
    const id = await proposed(pipelineDir, store);
    const help = await runIn(['--dir', pipelineDir, 'pass', '--help'], {});
    expect(help.stdout).toContain('[--urgent true|false] [--priority N] [--weight NUMBER]');
    const passed = await runIn(['--dir', pipelineDir, '--store', store, 'pass', id, '--urgent', 'true', '--priority', '3', '--weight', '0.5'], {});
    expect(passed).toMatchObject({ code: 0, stderr: '' });
    expect(proposalJson(store, id)['status']).toBe('passed');
  });

  it('reads an untyped enum or const by the value its text names: `--level 2` is the number 2, `--flag true` the boolean', async () => {
    const pipelineDir = editedPipeline({
      'stages/review.yaml': (yaml) =>
        yaml.replace(
          "      reason: { type: string, description: 'why, in a few words', examples: [not worth sharing] }\n",
          "      reason: { type: string, description: 'why, in a few words', examples: [not worth sharing] }\n      level: { enum: [1, 2, 3] }\n      flag: { const: true }\n",
        ),
    });
    const store = path.join(tempDir(), 'store');
    const id = await proposed(pipelineDir, store);
    const refused = await runIn(['--dir', pipelineDir, '--store', store, 'pass', id, '--level', '4'], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--level must be one of 1, 2 or 3, got "4"');
    const passed = await runIn(['--dir', pipelineDir, '--store', store, 'pass', id, '--level', '2', '--flag', 'true'], {});
    expect(passed).toMatchObject({ code: 0, stderr: '' });
  });

  it('refuses text that is not of the type, naming the option and what was typed, writing nothing', async () => {
    const pipelineDir = dir();
    const store = path.join(tempDir(), 'store');
    const id = await proposed(pipelineDir, store);
    const before = readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8');
    for (const [option, value, why] of [
      ['--urgent', 'yes', '--urgent must be true or false, got "yes"'],
      ['--priority', '2.5', '--priority must be a whole number, got "2.5"'],
      ['--weight', 'NaN', '--weight must be a number, got "NaN"'],
      ['--priority', '0', '--priority: priority must be at least 1, got 0'],
    ] as const) {
      const refused = await runIn(['--dir', pipelineDir, '--store', store, 'pass', id, option, value], {});
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(`refused: pass ${id} (pending): ${why}\n`);
    }
    expect(readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8')).toBe(before);
  });
});

describe('a value of a proposal or a source that names an inherited property', () => {
  it('promote refuses a proposal whose status is "constructor", "__proto__" or "toString", writing nothing', async () => {
    const t = await testEngine();
    const stage = t.pipeline.stages.find((candidate) => candidate.kind === 'promote')!;
    for (const status of ['constructor', '__proto__', 'toString']) {
      const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
      const file = path.join(t.storeDir, 'proposals', `${created.id}.json`);
      writeFileSync(file, `${JSON.stringify({ ...proposalJson(t.storeDir, created.id), status }, null, 2)}\n`);
      const before = readFileSync(file, 'utf8');
      const result = await promote(t.engine, stage as never, await storedOf(t.store, created.id), 'cli');
      expect(result.outcome).toMatchObject({ kind: 'refused' });
      expect((result.outcome as { message: string }).message).toContain(`${created.id} is ${status}; only approved or rejected proposals are promoted`);
      expect(readFileSync(file, 'utf8')).toBe(before);
    }
  });

  it("a source's pairs keep a name like __proto__ as a key of their own ($pairs)", () => {
    const expr = { $pairs: 'detail', line: '^Versions:[ \\t]*(\\S.*)$', item: '(?:^|,)\\s*([A-Za-z0-9@/._-]+)\\s+([^,]+)' };
    const { value } = evaluate(expr, { root: { detail: 'Versions: pnpm >=8 <9, __proto__ >=1 <2, constructor <3' }, now: '' });
    expect(Object.keys(value as object)).toEqual(['pnpm', '__proto__', 'constructor']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(value))).toEqual(JSON.parse('{"pnpm":">=8 <9","__proto__":">=1 <2","constructor":"<3"}'));
  });
});

describe('configuration files that are not text', () => {
  it('a FIFO where a file belongs is refused, never waited on, at the line naming it', async () => {
    const dir = copyPipeline();
    rmSync(path.join(dir, 'stages', 'promote.yaml'));
    execFileSync('mkfifo', [path.join(dir, 'stages', 'promote.yaml')]);
    const validate = await runIn(['--dir', dir, 'validate'], {});
    expect(validate.code).toBe(1);
    expect(validate.stderr).toMatch(/^pipeline\.yaml:\d+:5: cannot read stages\/promote\.yaml: it is a FIFO, not a regular file$/m);
  });

  it('a byte that is not UTF-8 is an error at its line and column, never a U+FFFD carried into the store', async () => {
    const dir = copyPipeline();
    const file = path.join(dir, 'stages', 'promote.yaml');
    const lines = readFileSync(file, 'utf8').split('\n');
    const line = lines.findIndex((text) => text.includes('status: active')) + 1;
    const col = lines[line - 1]!.indexOf('active') + 'activ'.length + 1;
    writeFileSync(file, Buffer.from(readFileSync(file, 'latin1').replace('status: active', 'status: activ\u00e9'), 'latin1'));
    const validate = await runIn(['--dir', dir, 'validate'], {});
    expect(validate.code).toBe(1);
    expect(validate.stderr).toContain(
      `stages/promote.yaml:${line}:${col}: cannot read stages/promote.yaml: it is not UTF-8 text (byte 0xE9 at line ${line}, column ${col})\n  hint: save the file as UTF-8`,
    );
  });
});

describe('a review command with no pipeline to declare it', () => {
  it('says there is no pipeline, not only that the command is unknown', async () => {
    const missing = path.join(tempDir(), 'nowhere');
    const ran = await runIn(['--dir', missing, 'pass', '01JC8A0000000000000000P001'], {});
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('unknown command: pass');
    expect(ran.stderr).toContain(`a review command is declared by the pipeline, and there is no pipeline.yaml in ${missing}`);
  });
});
