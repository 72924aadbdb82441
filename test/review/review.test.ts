/**
 * SPEC §5.3, row by row: every review command, every refusal (checked by its message and by the
 * proposal file and ledgers being byte-for-byte unchanged), the idempotent repeats, and the
 * byte-identical confirm → unconfirm round trip.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine/engine.js';
import type { Outcome } from '../../engine/outcome.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { BIN, proposalInput, ROOT, testEngine, type TestEngine } from '../helpers.js';

let t: TestEngine;
beforeEach(async () => {
  t = await testEngine();
});

async function propose(engine: Engine, overrides: Record<string, unknown> = {}): Promise<string> {
  const outcome = await engine.propose(proposalInput(overrides), { stage: 'test', actor: 'cli' });
  if (outcome.kind !== 'committed') throw new Error(`propose failed: ${JSON.stringify(outcome)}`);
  return outcome.id;
}

function review(command: string, id: string, args: Record<string, unknown> = {}): Promise<Outcome> {
  const found = findReviewCommand(t.pipeline, command);
  if (!found) throw new Error(`no review command ${command}`);
  return runReviewCommand(t.engine, found, id, args, 'cli');
}

function file(id: string): string {
  return path.join(t.storeDir, 'proposals', `${id}.json`);
}

/** Every file a refusal must leave alone. */
function snapshot(id: string): Record<string, string | undefined> {
  const read = (name: string) => (existsSync(name) ? readFileSync(name, 'utf8') : undefined);
  return {
    proposal: read(file(id)),
    events: read(path.join(t.storeDir, 'events.jsonl')),
    passed: read(path.join(t.storeDir, 'passed.jsonl')),
    declined: read(path.join(t.storeDir, 'declined.jsonl')),
  };
}

function proposal(id: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file(id), 'utf8')) as Record<string, unknown>;
}

async function expectRefused(run: () => Promise<Outcome>, id: string, message: RegExp): Promise<void> {
  const before = snapshot(id);
  const outcome = await run();
  expect(outcome.kind).toBe('refused');
  expect(outcome.kind === 'refused' ? outcome.message : '').toMatch(message);
  expect(snapshot(id)).toEqual(before);
}

function setStatus(id: string, status: string): void {
  const value = proposal(id);
  value['status'] = status;
  writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
}

describe('confirm', () => {
  it('confirms a pending proposal with its visibility and confirmed_at, and logs one audit row', async () => {
    const id = await propose(t.engine);
    const outcome = await review('confirm', id, { visibility: 'org' });
    expect(outcome).toMatchObject({ kind: 'committed', from: 'pending', to: 'confirmed' });
    const value = proposal(id);
    expect(value['status']).toBe('confirmed');
    expect(value['visibility']).toBe('org');
    expect(value['confirmed_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(value).not.toHaveProperty('candidate_before_confirm');
    const events = readFileSync(path.join(t.storeDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events.map((row) => [row.event, row.from, row.to, row.stage, row.actor])).toEqual([
      ['create', null, 'pending', 'test', 'cli'],
      ['confirm', 'pending', 'confirmed', 'review', 'cli'],
    ]);
  });

  it('refuses an invalid id before touching the file system', async () => {
    const outcome = await review('confirm', '../../etc/passwd', { visibility: 'org' });
    expect(outcome).toMatchObject({ kind: 'refused', code: 'invalid_id' });
    expect(outcome.kind === 'refused' && outcome.message).toMatch(/invalid id/);
  });

  it('refuses an unknown id as not found', async () => {
    const outcome = await review('confirm', '01ARZ3NDEKTSV4RRFFQ69G5FAV', { visibility: 'org' });
    expect(outcome.kind === 'refused' && outcome.message).toMatch(/not found/);
  });

  it('refuses a missing visibility, naming the allowed ones', async () => {
    const id = await propose(t.engine);
    await expectRefused(() => review('confirm', id), id, /--visibility is required \(private, org or public\)/);
  });

  it('refuses a visibility that is not private, org or public', async () => {
    const id = await propose(t.engine);
    await expectRefused(() => review('confirm', id, { visibility: 'everyone' }), id, /--visibility must be one of private, org or public, got "everyone"/);
  });

  it('refuses a blank justification (after trimming)', async () => {
    const id = await propose(t.engine);
    await expectRefused(() => review('confirm', id, { visibility: 'org', version_independent: '  \t ' }), id, /justification must not be blank/);
  });

  it('refuses version_independent at private visibility, saying a private proposal runs no jury', async () => {
    const id = await propose(t.engine);
    await expectRefused(
      () => review('confirm', id, { visibility: 'private', version_independent: 'true on every version' }),
      id,
      /private proposal runs no jury/,
    );
  });

  it('refuses private when the candidate is already version_independent', async () => {
    const id = await propose(t.engine);
    const value = proposal(id) as { candidate: { applies_to: { scope: unknown } } };
    value.candidate.applies_to.scope = { kind: 'version_independent', justification: 'true on every version of it' };
    writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
    await expectRefused(() => review('confirm', id, { visibility: 'private' }), id, /private proposal runs no jury/);
  });

  it('checks the private rule before the status (a passed proposal gets the private reason)', async () => {
    const id = await propose(t.engine);
    await review('pass', id);
    await expectRefused(() => review('confirm', id, { visibility: 'private', version_independent: 'true everywhere' }), id, /private proposal runs no jury/);
  });

  it('refuses a passed proposal, naming the status', async () => {
    const id = await propose(t.engine);
    await review('pass', id, { reason: 'not mine to share' });
    await expectRefused(() => review('confirm', id, { visibility: 'org' }), id, new RegExp(`${id} is passed`));
  });

  it('refuses a confirmed proposal at a different visibility, naming the status', async () => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'public' });
    await expectRefused(() => review('confirm', id, { visibility: 'private' }), id, new RegExp(`${id} is already confirmed with a different visibility`));
  });

  it('refuses a confirmed proposal whose repeat would change the candidate', async () => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'org', version_independent: 'The behaviour is defined by the protocol itself' });
    await expectRefused(
      () => review('confirm', id, { visibility: 'org', version_independent: 'another justification entirely' }),
      id,
      /already confirmed with a different visibility or resulting candidate/,
    );
  });

  it('accepts the same confirmation again as a success that writes nothing', async () => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'org', version_independent: 'The behaviour is defined by the protocol itself' });
    const before = snapshot(id);
    const outcome = await review('confirm', id, { visibility: 'org', version_independent: 'The behaviour is defined by the protocol itself' });
    expect(outcome).toMatchObject({ kind: 'unchanged', status: 'confirmed' });
    expect(snapshot(id)).toEqual(before);
    const plain = await review('confirm', id, { visibility: 'org' });
    expect(plain.kind).toBe('unchanged');
    expect(snapshot(id)).toEqual(before);
  });

  it('refuses a result that fails the confirmed schema, listing the problem', async () => {
    const id = await propose(t.engine);
    const value = proposal(id) as { candidate: { claim: string } };
    value.candidate.claim = '';
    writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
    const before = snapshot(id);
    const outcome = await review('confirm', id, { visibility: 'org' });
    expect(outcome.kind === 'refused' && outcome.message).toMatch(/fails the confirmed-proposal schema/);
    expect(outcome.kind === 'refused' && outcome.details?.join('\n')).toMatch(/claim/);
    expect(snapshot(id)).toEqual(before);
  });

  it('refuses any other status, naming it', async () => {
    const id = await propose(t.engine);
    setStatus(id, 'approved');
    await expectRefused(() => review('confirm', id, { visibility: 'org' }), id, new RegExp(`${id} is approved`));
    setStatus(id, 'haunted');
    await expectRefused(() => review('confirm', id, { visibility: 'org' }), id, /"haunted"/);
  });

  it('snapshots the candidate and rewrites the scope to exactly {kind, justification}', async () => {
    const id = await propose(t.engine);
    const original = (proposal(id) as { candidate: unknown }).candidate;
    await review('confirm', id, { visibility: 'public', version_independent: 'The lockfile format is defined by pnpm itself' });
    const value = proposal(id) as { candidate: { applies_to: { scope: unknown } }; candidate_before_confirm: unknown };
    expect(value.candidate_before_confirm).toEqual(original);
    expect(value.candidate.applies_to.scope).toEqual({ kind: 'version_independent', justification: 'The lockfile format is defined by pnpm itself' });
  });

  it('removes a stale snapshot on a plain confirm', async () => {
    const id = await propose(t.engine);
    const value = proposal(id);
    value['candidate_before_confirm'] = { stale: true };
    writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
    await review('confirm', id, { visibility: 'org' });
    expect(proposal(id)).not.toHaveProperty('candidate_before_confirm');
  });
});

describe('a person\u2019s text, held to the cap on a text field (64 KiB, as a transform holds a candidate)', () => {
  const long = 'x'.repeat(70_000);

  it('refuses a justification or a reason over it, naming the argument and the status, writing nothing', async () => {
    const id = await propose(t.engine);
    await expectRefused(
      () => review('confirm', id, { visibility: 'org', version_independent: long }),
      id,
      new RegExp(`^confirm ${id} \\(pending\\): --version-independent is 70000 bytes, over the 65536-byte cap per text field$`),
    );
    await expectRefused(
      () => review('pass', id, { reason: long }),
      id,
      new RegExp(`^pass ${id} \\(pending\\): REASON is 70000 bytes, over the 65536-byte cap per text field$`),
    );
    expect((await review('pass', id, { reason: 'x'.repeat(65_536) })).kind).toBe('committed');
  });

  it('refuses one typed in the walk, to be asked again', async () => {
    const { checkArgument } = await import('../../engine/stages/review.js');
    expect(checkArgument(t.engine, findReviewCommand(t.pipeline, 'pass')!, 'reason', long)).toBe(
      'reason is 70000 bytes, over the 65536-byte cap per text field',
    );
  });

  it('refuses a proposal given to propose with a text field over it, naming the field', async () => {
    const input = proposalInput();
    const outcome = await t.engine.propose({ ...input, candidate: { ...(input.candidate as object), claim: long } }, { stage: 'test', actor: 'cli' });
    expect(outcome).toMatchObject({ kind: 'refused', message: 'candidate.claim is 70000 bytes, over the 65536-byte cap per text field (max_field_bytes)' });
  });
});

describe('pass', () => {
  it('passes a pending proposal, stamps passed_at and appends one row to passed.jsonl (never declined.jsonl)', async () => {
    const id = await propose(t.engine);
    const outcome = await review('pass', id, { reason: 'too specific to this repo' });
    expect(outcome).toMatchObject({ kind: 'committed', to: 'passed' });
    const value = proposal(id);
    expect(value['passed_at']).toMatch(/Z$/);
    const rows = readFileSync(path.join(t.storeDir, 'passed.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(rows).toEqual([{ lesson_id: id, artifact_id: value['artifact_id'], reason: 'too specific to this repo', passed_at: value['passed_at'] }]);
    expect(existsSync(path.join(t.storeDir, 'declined.jsonl'))).toBe(false);
  });

  it('records a null reason when none is given', async () => {
    const id = await propose(t.engine);
    await review('pass', id);
    const row = JSON.parse(readFileSync(path.join(t.storeDir, 'passed.jsonl'), 'utf8').trim());
    expect(row.reason).toBeNull();
  });

  it('succeeds again without a second row, and the first reason stays', async () => {
    const id = await propose(t.engine);
    await review('pass', id, { reason: 'first' });
    const before = snapshot(id);
    const outcome = await review('pass', id, { reason: 'second' });
    expect(outcome).toMatchObject({ kind: 'unchanged', status: 'passed' });
    expect(snapshot(id)).toEqual(before);
  });

  it('refuses a confirmed proposal, naming the status', async () => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'org' });
    await expectRefused(() => review('pass', id), id, new RegExp(`${id} is confirmed`));
  });

  it('refuses any other status, naming it', async () => {
    const id = await propose(t.engine);
    setStatus(id, 'rejected');
    await expectRefused(() => review('pass', id), id, new RegExp(`${id} is rejected`));
  });

  it('keeps the file of a passed proposal, so its artifact counts as handled', async () => {
    const input = proposalInput();
    const created = await t.engine.propose(input, { stage: 'test', actor: 'cli' });
    const id = created.kind === 'committed' ? created.id : '';
    await review('pass', id);
    expect(existsSync(file(id))).toBe(true);
    const again = await t.engine.propose(input, { stage: 'test', actor: 'cli' });
    expect(again.kind === 'refused' && again.message).toMatch(/already proposed/);
  });

  it('finishes a pass killed between its file and its ledger row, on the next command: one row, the first reason', async () => {
    const id = await propose(t.engine);
    const env = { ...process.env, PIPELINE_STORE: t.storeDir, PIPELINE_CONFIG_CACHE: 'off', PIPELINE_FAILPOINT: 'document' };
    const killed = spawnSync(process.execPath, [BIN, 'pass', id, 'first'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(killed.signal).toBe('SIGKILL');
    expect(proposal(id)['status']).toBe('passed');
    expect(existsSync(path.join(t.storeDir, 'passed.jsonl'))).toBe(false);
    await review('pass', id, { reason: 'second' });
    const rows = readFileSync(path.join(t.storeDir, 'passed.jsonl'), 'utf8').trim().split('\n');
    expect(rows).toHaveLength(1);
    // the row is the interrupted commit's: its reason and the proposal's own passed_at
    expect(JSON.parse(rows[0]!)).toMatchObject({ lesson_id: id, reason: 'first', passed_at: proposal(id)['passed_at'] });
    const audit = readFileSync(path.join(t.storeDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(audit.filter((row) => row.id === id).map((row) => [row.event, row.repaired ?? false])).toEqual([
      ['create', false],
      ['pass', true],
    ]);
  });
});

describe('defer', () => {
  it('succeeds on a pending proposal and writes nothing', async () => {
    const id = await propose(t.engine);
    const before = snapshot(id);
    const outcome = await review('defer', id);
    expect(outcome).toMatchObject({ kind: 'unchanged', status: 'pending' });
    expect(snapshot(id)).toEqual(before);
  });

  it('refuses an unknown id as not found', async () => {
    const outcome = await review('defer', '01ARZ3NDEKTSV4RRFFQ69G5FAV');
    expect(outcome.kind === 'refused' && outcome.message).toMatch(/not found/);
  });

  it('refuses any other status, naming it', async () => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'org' });
    await expectRefused(() => review('defer', id), id, new RegExp(`${id} is confirmed`));
  });
});

describe('unconfirm', () => {
  it('returns a justified confirmation to the byte-identical pre-confirm file', async () => {
    const id = await propose(t.engine);
    const before = readFileSync(file(id));
    await review('confirm', id, { visibility: 'public', version_independent: 'The lockfile format is defined by pnpm itself' });
    expect(readFileSync(file(id)).equals(before)).toBe(false);
    const outcome = await review('unconfirm', id);
    expect(outcome).toMatchObject({ kind: 'committed', from: 'confirmed', to: 'pending' });
    expect(readFileSync(file(id)).equals(before)).toBe(true);
  });

  it('returns a plain confirmation to pending cleanly, and a fresh confirm at another visibility then succeeds', async () => {
    const id = await propose(t.engine);
    const before = readFileSync(file(id));
    await review('confirm', id, { visibility: 'public' });
    await review('unconfirm', id);
    expect(readFileSync(file(id)).equals(before)).toBe(true);
    const again = await review('confirm', id, { visibility: 'private' });
    expect(again).toMatchObject({ kind: 'committed', to: 'confirmed' });
    expect(proposal(id)['visibility']).toBe('private');
  });

  it('succeeds on a pending proposal, writes nothing and says it was already pending', async () => {
    const id = await propose(t.engine);
    const before = snapshot(id);
    const outcome = await review('unconfirm', id);
    expect(outcome).toMatchObject({ kind: 'unchanged', status: 'pending' });
    expect(outcome.kind === 'unchanged' && outcome.message).toMatch(/already pending/);
    expect(snapshot(id)).toEqual(before);
  });

  it('refuses a passed proposal and leaves passed.jsonl alone', async () => {
    const id = await propose(t.engine);
    await review('pass', id);
    await expectRefused(() => review('unconfirm', id), id, new RegExp(`${id} is passed`));
  });

  it.each(['approved', 'rejected', 'judging'])('refuses a %s proposal, naming the status', async (status) => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'org' });
    setStatus(id, status);
    await expectRefused(() => review('unconfirm', id), id, new RegExp(status === 'judging' ? '"judging"' : `${id} is ${status}`));
  });
});

describe('unpass', () => {
  const ledgerRows = () =>
    readFileSync(path.join(t.storeDir, 'passed.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it('returns a passed proposal to its byte-identical pre-pass file and appends {lesson_id, unpassed_at}', async () => {
    const id = await propose(t.engine);
    const before = readFileSync(file(id));
    await review('pass', id, { reason: 'by mistake' });
    const outcome = await review('unpass', id);
    expect(outcome).toMatchObject({ kind: 'committed', from: 'passed', to: 'pending' });
    expect(readFileSync(file(id)).equals(before)).toBe(true);
    const rows = ledgerRows();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ lesson_id: id, reason: 'by mistake' });
    expect(rows[1]).toEqual({ lesson_id: id, unpassed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) });
    const audit = readFileSync(path.join(t.storeDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(audit.map((row) => [row.event, row.from, row.to])).toEqual([
      ['create', null, 'pending'],
      ['pass', 'pending', 'passed'],
      ['unpass', 'passed', 'pending'],
    ]);
  });

  it('keeps the ledger append-only: a later pass appends a new row with its own reason', async () => {
    const id = await propose(t.engine);
    await review('pass', id, { reason: 'first' });
    await review('unpass', id);
    expect(await review('pass', id, { reason: 'second' })).toMatchObject({ kind: 'committed', to: 'passed' });
    expect(ledgerRows().map((row) => row['reason'] ?? 'unpassed')).toEqual(['first', 'unpassed', 'second']);
  });

  it('succeeds on a pending proposal and writes nothing', async () => {
    const id = await propose(t.engine);
    const before = snapshot(id);
    const outcome = await review('unpass', id);
    expect(outcome).toMatchObject({ kind: 'unchanged', status: 'pending' });
    expect(snapshot(id)).toEqual(before);
  });

  it.each(['confirmed', 'approved', 'rejected'])('refuses a %s proposal, naming the status', async (status) => {
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'org' });
    if (status !== 'confirmed') setStatus(id, status);
    await expectRefused(() => review('unpass', id), id, new RegExp(`${id} is ${status}; unpass applies only to pending or passed proposals`));
  });
});

describe('no model is ever called', () => {
  it('has no provider on any review command path', async () => {
    // The review stage declares no provider, and the review module does not import providers.
    const source = readFileSync(new URL('../../engine/stages/review.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/providers\//);
    const id = await propose(t.engine);
    await review('confirm', id, { visibility: 'public', version_independent: 'The lockfile format is defined by pnpm itself' });
    await review('unconfirm', id);
    expect(existsSync(path.join(t.storeDir, 'cache'))).toBe(false);
  });
});
