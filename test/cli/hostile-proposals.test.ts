/**
 * SPEC §4, §7, §12: one hostile proposal file never breaks a listing. A proposal nested thousands
 * of levels deep is reported by id (one line on stderr) and the rest is listed, exit code unchanged;
 * a status named like a member of Object.prototype is reported as written and counted nowhere.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { displayField } from '../../engine/cli/display.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../../engine/util/nesting.js';
import { tempDir } from '../helpers.js';
import { pendingProposal, runIn, writeProposal } from './memory-io.js';

const GOOD = '01JC8A0000000000000000P001';
const DEEP = '01JC8A0000000000000000P002';
const DEPTH = 5_000;

/** A proposal file, written by hand, with a field nested DEPTH levels deep (objects in arrays). */
function deepFile(id: string): string {
  const proposal = JSON.stringify(pendingProposal(id, 'deep claim'));
  return `${proposal.slice(0, -1)},"deep":${'[{"a":'.repeat(DEPTH / 2)}1${'}]'.repeat(DEPTH / 2)}}\n`;
}

function deepStore(): Record<string, string> {
  const store = path.join(tempDir(), 'store');
  writeProposal(store, GOOD, pendingProposal(GOOD, 'a fine claim'));
  writeProposal(store, DEEP, deepFile(DEEP));
  return { PIPELINE_STORE: store };
}

describe(`a proposal nested ${DEPTH} levels deep`, () => {
  it('list --json lists the others, reports it on one line by id, exit 0', async () => {
    const list = await runIn(['list', '--json'], deepStore());
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([pendingProposal(GOOD, 'a fine claim')]);
    const warning = `warning: ${DEEP}: the proposal nests more than ${MAX_PRINT_DEPTH} levels deep and cannot be printed — skipped, left as it is`;
    expect(list.stderr.trim().split('\n')).toEqual([warning]);
  });

  it('list --json prints exactly what JSON.stringify would for the printable ones', async () => {
    const store = path.join(tempDir(), 'store');
    const ids = ['01JC8A0000000000000000P003', '01JC8A0000000000000000P004'];
    for (const id of ids) writeProposal(store, id, pendingProposal(id, `claim ${id}`));
    const list = await runIn(['list', '--json'], { PIPELINE_STORE: store });
    expect(list.stdout).toBe(
      `${JSON.stringify(
        ids.map((id) => pendingProposal(id, `claim ${id}`)),
        null,
        2,
      )}\n`,
    );
    const empty = await runIn(['list', '--json', '--state', 'approved'], { PIPELINE_STORE: store });
    expect(empty.stdout).toBe('[]\n');
  });

  it('list and status still work; show refuses it by id, exit 1, never a crash', async () => {
    const env = deepStore();
    const list = await runIn(['list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toBe(`${GOOD}  a fine claim\n${DEEP}  deep claim\n`);
    const status = await runIn(['status', '--json'], env);
    expect(JSON.parse(status.stdout)).toMatchObject({ pending: 2 });
    for (const args of [
      ['show', DEEP],
      ['show', DEEP, '--json'],
    ]) {
      const show = await runIn(args, env);
      expect(show.code).toBe(1);
      expect(show.stdout).toBe('');
      expect(show.stderr).toBe(`refused: ${DEEP}: the proposal nests more than ${MAX_PRINT_DEPTH} levels deep and cannot be shown; it is left as it is\n`);
    }
    expect((await runIn(['show', GOOD], env)).code).toBe(0);
  });

  it('review and pool commands refuse it by id and status, writing nothing, never an internal error', async () => {
    const env = deepStore();
    const file = path.join(env['PIPELINE_STORE']!, 'proposals', `${DEEP}.json`);
    const before = readFileSync(file, 'utf8');
    for (const args of [
      ['pass', DEEP, 'not mine'],
      ['confirm', DEEP, '--visibility', 'org'],
      ['unpass', DEEP],
    ]) {
      const ran = await runIn(args, env);
      expect(ran.code).toBe(1);
      expect(ran.stderr).toBe(`refused: ${DEEP} (pending) nests more than ${MAX_PRINT_DEPTH} levels deep; nothing was written\n`);
    }
    writeFileSync(file, before.replace('"status":"pending"', '"status":"approved"').replace('"deep":', '"promoted_at":"2026-11-02T00:00:00Z","deep":'));
    const approved = readFileSync(file, 'utf8');
    for (const args of [
      ['pool', 'outcome', DEEP, 'hit'],
      ['pool', 'archive', DEEP],
    ]) {
      const ran = await runIn(args, env);
      expect(ran.code).toBe(1);
      expect(ran.stderr).toContain(`${DEEP} (approved) nests more than ${MAX_PRINT_DEPTH} levels deep; nothing was written`);
      expect(ran.stderr).not.toMatch(/internal error/);
    }
    expect(readFileSync(file, 'utf8')).toBe(approved);
  });

  it('the walk shows a field nested too deep as a note, not a crash', () => {
    const deep = JSON.parse(`${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`) as unknown;
    expect(displayField(deep)).toBe(`(nested more than ${MAX_PRINT_DEPTH} levels deep; not shown)`);
    expect(displayField(deep, { by: 'kind', cases: { x: '{{x}}' } })).toBe(`(nested more than ${MAX_PRINT_DEPTH} levels deep; not shown)`);
    expect(displayField({ kind: 'versioned', versions: { a: { b: 1 } } })).toBe('{"kind":"versioned","versions":{"a":{"b":1}}}');
  });

  it('measures depth without recursion, and stops at the limit', () => {
    expect(nestsDeeperThan(JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), MAX_PRINT_DEPTH)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
  });
});

describe('statuses named like members of Object.prototype', () => {
  const NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];

  function store(): Record<string, string> {
    const dir = path.join(tempDir(), 'store');
    writeProposal(dir, GOOD, pendingProposal(GOOD, 'a fine claim'));
    NAMES.forEach((status, i) => {
      const id = `01JC8A0000000000000000Q00${i}`;
      writeProposal(dir, id, pendingProposal(id, `claim ${i}`, { status }));
    });
    return { PIPELINE_STORE: dir };
  }

  it('status names each one as written and counts only the machine states', async () => {
    const env = store();
    const status = await runIn(['status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toBe('pending 1\nconfirmed 0\npassed 0\napproved 0\nrejected 0\narchived 0\n');
    expect(status.stderr.trim().split('\n').sort()).toEqual(
      NAMES.map((name) => `warning: 1 proposal has status "${name}", which the lifecycle does not know — not counted`).sort(),
    );
    expect(status.stderr).not.toMatch(/function|native code|\[object/);
  });

  it('status --json has exactly the machine states', async () => {
    const status = await runIn(['status', '--json'], store());
    expect(Object.keys(JSON.parse(status.stdout))).toEqual(['pending', 'confirmed', 'passed', 'approved', 'rejected', 'archived']);
    expect(JSON.parse(status.stdout)).toEqual({ pending: 1, confirmed: 0, passed: 0, approved: 0, rejected: 0, archived: 0 });
  });

  it('list --state pending lists only the pending one; list --state constructor is an unknown state', async () => {
    const env = store();
    const list = await runIn(['list', '--state', 'pending', '--json'], env);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).map((proposal: { id: string }) => proposal.id)).toEqual([GOOD]);
    for (const name of NAMES) {
      const odd = await runIn(['list', '--state', name], env);
      expect(odd.code).toBe(1);
      expect(odd.stderr).toContain(`unknown state "${name}"`);
    }
  });

  it('the visualizer counts only the machine states and names the others', async () => {
    const viz = await runIn(['viz', '--format', 'json'], store());
    expect(viz.code).toBe(0);
    expect(JSON.parse(viz.stdout).states.map((state: { id: string; count: number }) => [state.id, state.count])).toEqual([
      ['pending', 1],
      ['confirmed', 0],
      ['passed', 0],
      ['approved', 0],
      ['rejected', 0],
      ['archived', 0],
    ]);
    expect(viz.stderr).toContain('1 proposal has status "constructor", which the lifecycle does not know — not shown');
    expect(viz.stderr).toContain('1 proposal has status "__proto__", which the lifecycle does not know — not shown');
    expect(viz.stderr).not.toMatch(/function|native code|\[object/);
  });
});
