/**
 * SPEC §7, looking at what happened: `show --history`, `list --state all`, `--where`, `--grep`,
 * the reason on a rejected row, proposals named by their key field, and a mistyped store said
 * out loud instead of passing for an empty one. In-process, with the store set up through the
 * engine's API.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../engine/engine.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { fieldHolds, parseWhere } from '../../engine/cli/list-filter.js';
import { proposalInput, tempDir, testEngine } from '../helpers.js';
import { runIn, writeProposal } from './memory-io.js';

async function propose(engine: Engine, overrides: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const input = proposalInput(overrides);
  const outcome = await engine.propose(input, { stage: 'test', actor: 'cli' });
  if (outcome.kind !== 'committed') throw new Error(outcome.kind);
  return { id: outcome.id, key: input.artifact_id };
}

async function review(engine: Engine, command: string, id: string, args: Record<string, unknown> = {}): Promise<void> {
  const found = findReviewCommand(engine.pipeline, command)!;
  const outcome = await runReviewCommand(engine, found, id, args, 'cli');
  if (outcome.kind !== 'committed') throw new Error(`${command}: ${outcome.kind}`);
}

/** Four proposals: two pending (one about timeouts), one confirmed at org, one passed. */
async function seeded() {
  const t = await testEngine();
  const env = { PIPELINE_STORE: t.storeDir };
  const a = await propose(t.engine);
  const b = await propose(t.engine, { claim: 'Vitest 4 raises the default Timeout of hooks to 10 seconds for every suite' });
  const c = await propose(t.engine);
  const d = await propose(t.engine);
  await review(t.engine, 'confirm', c.id, { visibility: 'org' });
  await review(t.engine, 'pass', d.id, { reason: 'not mine' });
  return { t, env, a, b, c, d };
}

describe('show --history', () => {
  it('prints the audit rows oldest first after the proposal; --json prints {proposal, history}', async () => {
    const { env, c } = await seeded();
    const text = await runIn(['show', c.id, '--history'], env);
    expect(text.code).toBe(0);
    expect(text.stdout.slice(text.stdout.indexOf('history')).replaceAll(c.id, '<id>')).toMatchInlineSnapshot(`
      "history (oldest first):
        2026-11-01T12:00:02Z  create  — → pending  (test, cli)
        2026-11-01T12:00:04Z  confirm  pending → confirmed  (review, cli)
      "
    `);
    const json = await runIn(['show', c.id, '--history', '--json'], env);
    const parsed = JSON.parse(json.stdout);
    expect(Object.keys(parsed)).toEqual(['proposal', 'history']);
    expect(parsed.proposal).toMatchObject({ id: c.id, status: 'confirmed' });
    expect(parsed.history.map((row: { event: string }) => row.event)).toEqual(['create', 'confirm']);
    // without --history, --json is the proposal object itself
    expect(JSON.parse((await runIn(['show', c.id, '--json'], env)).stdout)).toMatchObject({ id: c.id, status: 'confirmed' });
  });

  it('says so when a proposal has no history (a file written by hand)', async () => {
    const store = path.join(tempDir(), 'store');
    const input = proposalInput();
    const hand = '01JBQA0000000000000000HAND';
    writeProposal(store, hand, { id: hand, artifact_id: input.artifact_id, created_at: '2026-11-01T12:00:00Z', status: 'pending', candidate: input.candidate });
    const ran = await runIn(['show', '01JBQA0000000000000000HAND', '--history'], { PIPELINE_STORE: store });
    expect(ran.stdout).toMatch(/\nhistory: none recorded \(the file was not written by the engine\)\n$/);
  });
});

describe('a proposal named by its key field', () => {
  it('finds the proposal made from an artifact id, in show and in every command that takes an id', async () => {
    const { env, a, c } = await seeded();
    const shown = await runIn(['show', a.key, '--json'], env);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout).id).toBe(a.id);
    const confirmed = await runIn(['confirm', a.key, '--visibility', 'org'], env);
    expect([confirmed.code, confirmed.stdout]).toEqual([0, `${a.id} pending → confirmed\n`]);
    const again = await runIn(['unconfirm', c.key], env);
    expect(again.stdout).toBe(`${c.id} confirmed → pending\n`);
  });

  it('lets a proposal id win over a key, and still refuses what is not a ULID as an invalid id', async () => {
    const { t, env, a } = await seeded();
    // a second proposal whose key is the first one's id
    const clash = proposalInput();
    clash.artifact_id = a.id;
    const outcome = await t.engine.propose(clash, { stage: 'test', actor: 'cli' });
    expect(outcome.kind).toBe('committed');
    expect(JSON.parse((await runIn(['show', a.id, '--json'], env)).stdout).id).toBe(a.id);
    const invalid = await runIn(['show', 'A004'], env);
    expect([invalid.code, invalid.stderr]).toEqual([1, 'refused: invalid id: "A004" is not a ULID\n']);
    // Quoted cut short: an argument may be any size.
    const long = await runIn(['show', 'x'.repeat(100_000)], env);
    expect([long.code, long.stderr]).toEqual([1, `refused: invalid id: "${'x'.repeat(40)}…" is not a ULID\n`]);
  });

  it('holds a key given to propose to 1 KiB (a key is an identifier, indexed by every backend): longer is refused, not kept and quoted whole', async () => {
    const { t } = await seeded();
    const propose = (key: string) => t.engine.propose({ ...proposalInput(), artifact_id: key }, { stage: 'test', actor: 'cli' });
    expect(await propose('k'.repeat(100_000))).toMatchObject({
      kind: 'refused',
      code: 'invalid_input',
      message: 'artifact_id is 100000 bytes; a key is at most 1024',
    });
    expect(await propose('k'.repeat(1025))).toMatchObject({ kind: 'refused', message: 'artifact_id is 1025 bytes; a key is at most 1024' });
    expect((await propose('k'.repeat(1024))).kind).toBe('committed');
  });

  it('says a declined key made no proposal, instead of a bare "not found"', async () => {
    const { t, env } = await seeded();
    const key = '01JBQA00000000000000DECXNE';
    await t.store.appendLedger('declined', { artifact_id: key, reason: 'no_versions', detail: null, declined_at: '2026-11-01T12:00:00Z' });
    const ran = await runIn(['show', key], env);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatchInlineSnapshot(`
      "refused: 01JBQA00000000000000DECXNE: not found — no proposal has this id, and the artifact_id 01JBQA00000000000000DECXNE was declined, so no proposal was made from it
      "
    `);
  });
});

describe('list', () => {
  it('lists every state with --state all, each row saying its status', async () => {
    const { env, a, b, c, d } = await seeded();
    const ran = await runIn(['list', '--state', 'all'], env);
    expect(ran.code).toBe(0);
    const rows = ran.stdout.trim().split('\n');
    expect(rows.map((row) => row.slice(0, 26))).toEqual([a.id, b.id, c.id, d.id]);
    expect(rows.map((row) => /\((\w+)\)$/.exec(row)?.[1])).toEqual(['pending', 'pending', 'confirmed', 'passed']);
    expect(JSON.parse((await runIn(['list', '--state', 'all', '--json'], env)).stdout)).toHaveLength(4);
  });

  it('filters with --where FIELD=VALUE (repeatable, dotted paths, list items) and --grep over the title, in any case', async () => {
    const { env, b, c } = await seeded();
    const org = await runIn(['list', '--state', 'all', '--where', 'visibility=org', '--json'], env);
    expect(JSON.parse(org.stdout).map((p: { id: string }) => p.id)).toEqual([c.id]);
    const both = await runIn(['list', '--state', 'all', '--where', 'visibility=org', '--where', 'candidate.applies_to.stack=pnpm', '--json'], env);
    expect(JSON.parse(both.stdout).map((p: { id: string }) => p.id)).toEqual([c.id]);
    const none = await runIn(['list', '--state', 'all', '--where', 'visibility=org', '--where', 'status=pending'], env);
    expect([none.code, none.stdout]).toEqual([0, '']);
    const grep = await runIn(['list', '--grep', 'TIMEOUT'], env);
    expect(grep.stdout).toBe(`${b.id}  Vitest 4 raises the default Timeout of hooks to 10 seconds for every suite\n`);
  });

  it('refuses a --where without FIELD=VALUE and an unknown state, naming what is allowed', async () => {
    const { env } = await seeded();
    const bad = await runIn(['list', '--where', 'visibility'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatchInlineSnapshot(`
      "error: --where needs FIELD=VALUE with FIELD a dotted path (e.g. status=pending), got "visibility"
      usage: pipeline list [--state S|all] [--where FIELD=VALUE …] [--grep TEXT] [--json]
      "
    `);
    const state = await runIn(['list', '--state', 'aproved'], env);
    expect(state.code).toBe(1);
    expect(state.stderr).toMatchInlineSnapshot(`
      "error: unknown state "aproved" (expected pending, confirmed, passed, approved, rejected, archived or all); did you mean "approved"?
      usage: pipeline list [--state S|all] [--where FIELD=VALUE …] [--grep TEXT] [--json]
      "
    `);
  });

  it('shows the reason on a rejected row', async () => {
    const store = path.join(tempDir(), 'store');
    const input = proposalInput();
    const verdict = {
      rubric_id: 'lesson-promotion',
      gate_policy: 'majority',
      score_threshold: 0.75,
      aggregate_score: 0.61,
      passed: false,
      reason: 'criterion_floor',
    };
    const id = '01JBQA000000000000000REJCT';
    const file = { id, artifact_id: input.artifact_id, created_at: '2026-11-01T12:00:00Z', status: 'rejected', candidate: input.candidate, visibility: 'org' };
    writeProposal(store, id, { ...file, verdict: { ...verdict, judges: [], failed_criterion: 'generality' } });
    const ran = await runIn(['list', '--state', 'rejected'], { PIPELINE_STORE: store });
    expect(ran.stdout).toBe(`01JBQA000000000000000REJCT  ${String(input.candidate['claim'])}  (rejected: criterion_floor: generality)\n`);
  });

  it('compares --where values as text, and a list field by its items', () => {
    const [condition] = parseWhere(['candidate.applies_to.stack=pnpm'], 'usage');
    expect(fieldHolds({ candidate: { applies_to: { stack: ['npm', 'pnpm'] } } }, condition!)).toBe(true);
    expect(fieldHolds({ n: 3 }, parseWhere(['n=3'], 'u')[0]!)).toBe(true);
    expect(fieldHolds({ n: null }, parseWhere(['n=null'], 'u')[0]!)).toBe(true);
    expect(fieldHolds({}, parseWhere(['n='], 'u')[0]!)).toBe(false);
    expect(fieldHolds({ a: 'x=y' }, parseWhere(['a=x=y'], 'u')[0]!)).toBe(true);
  });
});

describe('a store that does not exist', () => {
  it('is said out loud for an explicit --store or PIPELINE_STORE, before the empty result', async () => {
    const missing = path.join(tempDir(), 'typo');
    const status = await runIn(['status', '--store', missing], {});
    expect(status.code).toBe(0);
    expect(status.stderr).toBe(`warning: no store at ${missing}; nothing has been written there yet\n`);
    expect(status.stdout).toBe('pending 0\nconfirmed 0\npassed 0\napproved 0\nrejected 0\narchived 0\n');
    const list = await runIn(['list', '--json'], { PIPELINE_STORE: missing });
    expect([list.stdout, list.stderr]).toEqual(['[]\n', `warning: no store at ${missing}; nothing has been written there yet\n`]);
    const show = await runIn(['show', '01JC8A7ZJ4W6V3X8RDY2C5N9KT'], { PIPELINE_STORE: missing });
    expect(show.stderr).toMatch(/^warning: no store at .*\nrefused: 01JC8A7ZJ4W6V3X8RDY2C5N9KT: not found\n$/);
  });

  it('says nothing for a store that exists, however empty', async () => {
    const { env } = await seeded();
    expect((await runIn(['status'], env)).stderr).toBe('');
  });
});
