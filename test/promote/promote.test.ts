/**
 * SPEC §5.6: the pool entry's exact key set and values, the author key, the declined row with
 * the verdict nested, record-first-then-stamp, idempotence and refusals that write nothing.
 */
import { createHmac } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JudgeStageDef, PromoteStageDef } from '../../engine/config/types.js';
import { judgeWithVerdicts } from '../../engine/stages/judge.js';
import { promote } from '../../engine/stages/promote.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { proposalInput, proposalJson, SECRET_FILE, storedOf, testEngine, type TestEngine } from '../helpers.js';

let t: TestEngine;
let judgeStage: JudgeStageDef;
let stage: PromoteStageDef;
beforeEach(async () => {
  t = await testEngine();
  judgeStage = t.pipeline.stages.find((candidate) => candidate.kind === 'judge') as JudgeStageDef;
  stage = t.pipeline.stages.find((candidate) => candidate.kind === 'promote') as PromoteStageDef;
  rmSync(SECRET_FILE!, { force: true });
});
afterEach(() => rmSync(SECRET_FILE!, { force: true }));

const scores = { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 0.95 };
const panel = (adversarialPasses = true) => [
  { judge_type: 'standard', score: 0.9, passed: true, criterion_scores: scores },
  { judge_type: 'adversarial', score: 0.8, passed: adversarialPasses, criterion_scores: scores },
];

const file = (id: string) => path.join(t.storeDir, 'proposals', `${id}.json`);
const read = (id: string) => proposalJson(t.storeDir, id);
const stored = (id: string) => storedOf(t.store, id);

/** A judged proposal (the verdict committed without promoting it). */
async function judged(visibility: string, passes = true): Promise<string> {
  const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
  if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
  await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility }, 'cli');
  const result = await judgeWithVerdicts(t.engine, judgeStage, await stored(created.id), { ok: true, value: panel(passes) }, { actor: 'cli' });
  if (result.outcome.kind !== 'committed') throw new Error(JSON.stringify(result.outcome));
  return created.id;
}

const pool = (id: string) => path.join(t.storeDir, 'approved', `${id}.json`);
const declined = () =>
  existsSync(path.join(t.storeDir, 'declined.jsonl'))
    ? readFileSync(path.join(t.storeDir, 'declined.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];

describe('approved → pool entry', () => {
  it('has exactly the keys of §5.6, in that order, with the mapped values', async () => {
    const id = await judged('public');
    const before = read(id);
    const result = await promote(t.engine, stage, await stored(id), 'cli');
    expect(result.outcome.kind).toBe('committed');
    const entry = JSON.parse(readFileSync(pool(id), 'utf8'));
    expect(Object.keys(entry)).toEqual([
      'id',
      'schema_version',
      'claim',
      'rationale',
      'evidence',
      'applies_to',
      'visibility',
      'consensus',
      'status',
      'superseded_by',
      'source',
      'author_key',
      'promoted_at',
    ]);
    expect(entry).toMatchObject({
      id,
      schema_version: 2,
      claim: before.candidate.claim,
      rationale: before.candidate.rationale,
      evidence: before.candidate.evidence,
      applies_to: before.candidate.applies_to,
      visibility: 'public',
      status: 'active',
      superseded_by: null,
      source: 'public',
    });
    expect(entry.consensus).toEqual({ judges: 2, agreed: 2, decided_at: before.judged_at });
    expect(read(id).promoted_at).toBe(entry.promoted_at);
  });

  it('derives author_key from a 0600 secret created once: HMAC-SHA256 of the hex text over onlooker.author.v1:<visibility>, 32 hex', async () => {
    const id = await judged('org');
    await promote(t.engine, stage, await stored(id), 'cli');
    const secret = readFileSync(SECRET_FILE!, 'utf8').trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(SECRET_FILE!).mode & 0o777).toBe(0o600);
    const expected = createHmac('sha256', secret).update('onlooker.author.v1:org').digest('hex').slice(0, 32);
    expect(JSON.parse(readFileSync(pool(id), 'utf8')).author_key).toBe(expected);
    const second = await judged('org');
    await promote(t.engine, stage, await stored(second), 'cli');
    expect(readFileSync(SECRET_FILE!, 'utf8').trim()).toBe(secret);
  });

  it('maps private to source local with no judges, org to org; agreed never exceeds judges', async () => {
    const priv = await judged('private');
    const org = await judged('org');
    await promote(t.engine, stage, await stored(priv), 'cli');
    await promote(t.engine, stage, await stored(org), 'cli');
    const privEntry = JSON.parse(readFileSync(pool(priv), 'utf8'));
    expect(privEntry.source).toBe('local');
    expect(privEntry.consensus).toMatchObject({ judges: 0, agreed: 0 });
    const orgEntry = JSON.parse(readFileSync(pool(org), 'utf8'));
    expect(orgEntry.source).toBe('org');
    expect(orgEntry.consensus.agreed).toBeLessThanOrEqual(orgEntry.consensus.judges);
  });

  it('writes the record first, then stamps; promoting twice changes nothing', async () => {
    const id = await judged('org');
    await promote(t.engine, stage, await stored(id), 'cli');
    const entry = readFileSync(pool(id), 'utf8');
    const proposal = readFileSync(file(id), 'utf8');
    const again = await promote(t.engine, stage, await stored(id), 'cli');
    expect(again.outcome.kind).toBe('unchanged');
    expect(readFileSync(pool(id), 'utf8')).toBe(entry);
    expect(readFileSync(file(id), 'utf8')).toBe(proposal);
    const events = readFileSync(path.join(t.storeDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((row) => row.id === id && row.event === 'promote');
    expect(events).toEqual([expect.objectContaining({ from: 'approved', to: 'approved' })]);
  });

  it('finishes the stamp after a crash between the record and the stamp, without writing the record twice', async () => {
    const id = await judged('org');
    await promote(t.engine, stage, await stored(id), 'cli');
    const entry = readFileSync(pool(id), 'utf8');
    const value = read(id);
    delete value.promoted_at;
    writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
    const result = await promote(t.engine, stage, await stored(id), 'cli');
    expect(result.outcome.kind).toBe('committed');
    expect(readFileSync(pool(id), 'utf8')).toBe(entry);
    expect(read(id).promoted_at).toMatch(/Z$/);
  });
});

describe('rejected → declined row', () => {
  it('appends {artifact_id, id, reason, detail: null, declined_at, verdict} once, with no pool entry', async () => {
    const id = await judged('org', false);
    await promote(t.engine, stage, await stored(id), 'cli');
    await promote(t.engine, stage, await stored(id), 'cli');
    const rows = declined();
    expect(rows).toHaveLength(1);
    expect(Object.keys(rows[0])).toEqual(['artifact_id', 'id', 'reason', 'detail', 'declined_at', 'verdict']);
    expect(rows[0]).toMatchObject({ artifact_id: read(id).artifact_id, id, reason: 'jury_not_majority', detail: null });
    expect(rows[0].verdict).toEqual(read(id).verdict);
    expect(existsSync(pool(id))).toBe(false);
  });
});

describe('refusals write nothing', () => {
  it('refuses a status without an outcome, naming it', async () => {
    const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    const id = created.kind === 'committed' ? created.id : '';
    const before = readFileSync(file(id), 'utf8');
    const result = await promote(t.engine, stage, await stored(id), 'cli');
    expect(result.outcome.kind === 'refused' && result.outcome.message).toMatch(new RegExp(`${id} is pending; only approved or rejected`));
    expect(readFileSync(file(id), 'utf8')).toBe(before);
  });

  it('refuses a proposal missing what the entry needs, naming the fields', async () => {
    const id = await judged('org');
    const value = read(id);
    delete value.visibility;
    delete value.judged_at;
    writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
    const before = readFileSync(file(id), 'utf8');
    const result = await promote(t.engine, stage, await stored(id), 'cli');
    expect(result.outcome.kind === 'refused' && result.outcome.message).toMatch(/has no visibility and judged_at/);
    expect(existsSync(pool(id))).toBe(false);
    expect(readFileSync(file(id), 'utf8')).toBe(before);
  });

  it('refuses with a malformed secret: nothing written, still approved, no promoted_at, secret left as it is', async () => {
    mkdirSync(path.dirname(SECRET_FILE!), { recursive: true });
    writeFileSync(SECRET_FILE!, 'short\n', { mode: 0o600 });
    const id = await judged('org');
    const result = await promote(t.engine, stage, await stored(id), 'cli');
    expect(result.outcome.kind === 'refused' && result.outcome.message).toMatch(/malformed/);
    expect(existsSync(pool(id))).toBe(false);
    expect(read(id).status).toBe('approved');
    expect(read(id)).not.toHaveProperty('promoted_at');
    expect(readFileSync(SECRET_FILE!, 'utf8')).toBe('short\n');
  });

  it('tightens a secret readable by others, with a warning', async () => {
    mkdirSync(path.dirname(SECRET_FILE!), { recursive: true });
    writeFileSync(SECRET_FILE!, `${'ab'.repeat(32)}\n`);
    chmodSync(SECRET_FILE!, 0o644);
    const id = await judged('org');
    const result = await promote(t.engine, stage, await stored(id), 'cli');
    expect(result.outcome.kind).toBe('committed');
    expect(result.warnings.join('\n')).toMatch(/tightened to 600/);
    expect(statSync(SECRET_FILE!).mode & 0o777).toBe(0o600);
  });
});
