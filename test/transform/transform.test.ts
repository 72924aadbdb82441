/**
 * SPEC §5.5, outcome by outcome: proposed, declined (each reason), untouched (retried next run),
 * skipped before any provider call (handled, pre-gate), and bad records reported.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { TransformStageDef } from '../../engine/config/types.js';
import type { Provider, ProviderRequest, ProviderResult } from '../../engine/providers/types.js';
import type { RunOptions } from '../../engine/runner/driver.js';
import { runStage } from '../../engine/stages/index.js';
import { tempDir, testEngine, type TestEngine, quietRun } from '../helpers.js';

let t: TestEngine;
let stage: TransformStageDef;
let source: string;
beforeEach(async () => {
  t = await testEngine();
  stage = t.pipeline.stages.find((candidate) => candidate.kind === 'transform') as TransformStageDef;
  source = tempDir('pipeline-source-');
});

let counter = 0;
function artifact(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  const id = `01JD${String(counter).padStart(22, '0')}`;
  return {
    id,
    kind: 'decision',
    project_key: 'a1b2c3d4e5f6',
    session_id: `session-${counter}`,
    created_at: `2026-10-${String(10 + (counter % 18)).padStart(2, '0')}T10:00:00Z`,
    summary: 'Vitest 4.1 needs Node 20 or later to run its workers',
    detail:
      'Running the suite on Node 18 crashed the workers at start.\nResolution: moved CI to Node 20 and pinned engines in package.json.\nVersions: vitest >=4 <5',
    files: ['package.json'],
    ...overrides,
  };
}

function write(records: Record<string, unknown>[]): void {
  for (const record of records) writeFileSync(path.join(source, `${String(record['id'])}.json`), JSON.stringify(record));
}

function fake(
  answer: (request: ProviderRequest) => ProviderResult | Promise<ProviderResult>,
  kind: Provider['kind'] = 'command',
): Provider & { calls: ProviderRequest[] } {
  const calls: ProviderRequest[] = [];
  return {
    name: 'fake',
    kind,
    paid: false,
    model: 'm',
    deterministic: kind === 'map',
    calls,
    async call(request) {
      calls.push(request);
      return answer(request);
    },
  };
}

const candidate = (extra: Record<string, unknown> = {}) => ({
  claim: 'Vitest 4 needs Node 20 or later to run its worker threads',
  rationale: 'Its workers use APIs that Node 18 does not have, so the run crashes at start.',
  evidence: {
    resolution: 'Moved CI to Node 20.',
    artifact_ids: ['01ARZ3NDEKTSV4RRFFQ69G5FAV'],
    session_ids: ['wrong'],
    project_key: '000000000000',
    observed_at: '2020-01-01T00:00:00Z',
  },
  applies_to: { stack: ['vitest'], scope: { kind: 'versioned', versions: { vitest: '>=4 <5' } }, file_patterns: ['package.json'], task_kinds: ['ci'] },
  ...extra,
});

async function run(provider: Provider, extra: Partial<RunOptions> = {}) {
  const notes: string[] = [];
  const summary = await runStage(
    t.engine,
    stage,
    quietRun({
      concurrency: 4,
      useCache: true,
      source,
      note: (line) => notes.push(line),
      providers: { get: () => provider },
      ...extra,
    }),
  );
  return { summary, notes };
}

const declined = () =>
  existsSync(path.join(t.storeDir, 'declined.jsonl'))
    ? readFileSync(path.join(t.storeDir, 'declined.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
    : [];
const proposals = () =>
  existsSync(path.join(t.storeDir, 'proposals'))
    ? readdirSync(path.join(t.storeDir, 'proposals')).map((name) => JSON.parse(readFileSync(path.join(t.storeDir, 'proposals', name), 'utf8')))
    : [];

describe('proposed', () => {
  it('writes a pending proposal with a create audit row, provenance stitched over the answer', async () => {
    const record = artifact();
    write([record]);
    const { summary } = await run(
      fake(() => ({ ok: true, text: `Sure! Here it is:\n\`\`\`json\n${JSON.stringify(candidate())}\n\`\`\``, usage: { tokens_in: 10, tokens_out: 5 } })),
    );
    expect(summary.counts['proposed']).toBe(1);
    const [proposal] = proposals();
    expect(proposal).toMatchObject({ artifact_id: record['id'], status: 'pending' });
    expect(proposal.candidate.evidence).toEqual({
      resolution: 'Moved CI to Node 20.',
      artifact_ids: [record['id']],
      session_ids: [record['session_id']],
      project_key: 'a1b2c3d4e5f6',
      observed_at: record['created_at'],
    });
    const events = readFileSync(path.join(t.storeDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events).toEqual([expect.objectContaining({ id: proposal.id, event: 'create', from: null, to: 'pending', stage: 'transform', actor: 'run' })]);
    expect(summary.tokens).toEqual({ tokens_in: 10, tokens_out: 5 });
  });

  it('reads records in order of created_at, then id, and numbers the proposals in that order', async () => {
    const late = artifact({ created_at: '2026-10-20T10:00:00Z' });
    const early = artifact({ created_at: '2026-10-01T10:00:00Z' });
    const tieB = artifact({ id: '01JDZZ0000000000000000000B', created_at: '2026-10-05T10:00:00Z' });
    const tieA = artifact({ id: '01JDZZ0000000000000000000A', created_at: '2026-10-05T10:00:00Z' });
    write([late, early, tieB, tieA]);
    const seen: string[] = [];
    await run(
      fake((request) => {
        seen.push(String((request.input['record'] as { id: string }).id));
        return { ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } };
      }),
      { concurrency: 1, useCache: false },
    );
    const expected = [early, tieA, tieB, late].map((record) => record['id']);
    expect(seen).toEqual(expected);
    expect(
      proposals()
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((proposal) => proposal.artifact_id),
    ).toEqual(expected);
  });
});

describe('declined, with exactly the four reasons', () => {
  it.each([
    ['no_resolution', { eligible: false, reason: 'no_resolution' }, 'no_resolution', null],
    ['no_versions', { eligible: false, reason: 'no_versions' }, 'no_versions', null],
    ['another refusal', { eligible: false, reason: 'not_a_lesson' }, 'transform_invalid', 'refused: not_a_lesson'],
    // The model's words, kept in a ledger row and printed: cut, however long the answer.
    [
      'a refusal with a long reason',
      { eligible: false, reason: `${'why '.repeat(200_000)}` },
      'transform_invalid',
      `refused: ${'why '.repeat(250)}`.slice(0, 1000),
    ],
    ['an answer that is not a JSON object', ['a', 'list'], 'transform_invalid', 'the answer is not a JSON object'],
    [
      'a candidate that fails the schema',
      candidate({ applies_to: { stack: ['vitest'], scope: { kind: 'versioned', versions: { vitest: '^4' } }, file_patterns: [], task_kinds: [] } }),
      'schema_invalid',
      /version range/,
    ],
    [
      'version_independent from a model',
      candidate({ applies_to: { stack: ['vitest'], scope: { kind: 'version_independent', justification: 'always true' }, file_patterns: [], task_kinds: [] } }),
      'schema_invalid',
      /versioned/,
    ],
  ])('for %s', async (_name, answer, reason, detail) => {
    const record = artifact();
    write([record]);
    const { summary } = await run(fake(() => ({ ok: true, text: JSON.stringify(answer), usage: { tokens_in: null, tokens_out: null } })));
    expect(summary.counts['declined']).toBe(1);
    const [row] = declined();
    expect(Object.keys(row)).toEqual(['artifact_id', 'reason', 'detail', 'declined_at']);
    expect(row).toMatchObject({ artifact_id: record['id'], reason });
    if (detail instanceof RegExp) expect(row.detail).toMatch(detail);
    else expect(row.detail).toBe(detail);
    expect(proposals()).toEqual([]);
  });

  it('for an unparseable answer', async () => {
    write([artifact()]);
    await run(fake(() => ({ ok: true, text: 'I would rather not.', usage: { tokens_in: null, tokens_out: null } })));
    expect(declined()[0]).toMatchObject({ reason: 'transform_invalid', detail: expect.stringMatching(/not JSON/) });
  });

  it('quickly, for a pathologically large or deeply nested answer', async () => {
    write([artifact(), artifact()]);
    const answers = ['{'.repeat(900_000), `{"claim": "${'x'.repeat(2 * 1024 * 1024)}"}`];
    await run(fake(() => ({ ok: true, text: answers.pop()!, usage: { tokens_in: null, tokens_out: null } })));
    expect(declined().map((row) => row.reason)).toEqual(['transform_invalid', 'transform_invalid']);
  });

  it('never sends a declined artifact to a provider again', async () => {
    write([artifact()]);
    await run(fake(() => ({ ok: true, text: JSON.stringify({ eligible: false, reason: 'no_versions' }), usage: { tokens_in: null, tokens_out: null } })));
    const second = fake(() => ({ ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } }));
    const { summary } = await run(second);
    expect(second.calls).toHaveLength(0);
    expect(summary.counts['already_handled']).toBe(1);
    expect(declined()).toHaveLength(1);
  });
});

describe('untouched: nothing written anywhere, retried next run', () => {
  it.each([
    ['missing', { ok: false as const, outage: 'command provider "fake": program not found' }],
    ['failing', { ok: false as const, outage: 'HTTP 500 (gave up after 3 attempts)' }],
    ['timing out', { ok: false as const, outage: 'timed out after 60 s' }],
    ['answering nothing', { ok: true as const, text: '   ', usage: { tokens_in: null, tokens_out: null } }],
  ])('when the provider is %s, and the next run with a working provider proposes it', async (_name, result) => {
    const record = artifact();
    write([record]);
    const first = await run(fake(() => result));
    expect(first.summary.counts['untouched']).toBe(1);
    expect(first.summary.unjudged).toEqual([record['id']]);
    const entries = existsSync(t.storeDir) ? readdirSync(t.storeDir).filter((name) => !name.startsWith('.')) : [];
    expect(entries.filter((name) => name !== 'cache')).toEqual([]);
    const second = await run(fake(() => ({ ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } })));
    expect(second.summary.counts['proposed']).toBe(1);
    expect(proposals()[0].artifact_id).toBe(record['id']);
  });
});

describe('skipped before any provider call', () => {
  it('skips a record already proposed', async () => {
    write([artifact()]);
    await run(fake(() => ({ ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } })));
    const second = fake(() => ({ ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } }));
    await run(second);
    expect(second.calls).toHaveLength(0);
    expect(proposals()).toHaveLength(1);
  });

  it('skips silently a record with no version-shaped token (pre-gate)', async () => {
    write([artifact({ summary: 'Prefer small commits', detail: 'Small commits bisect better.\nResolution: agreed.' })]);
    const provider = fake(() => ({ ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } }));
    const { summary } = await run(provider);
    expect(provider.calls).toHaveLength(0);
    expect(summary.counts['skipped_by_pregate']).toBe(1);
    expect(existsSync(path.join(t.storeDir, 'declined.jsonl'))).toBe(false);
  });

  it.each([
    ['1.2', true],
    ['v3 API', true],
    ['5.x line', true],
    ['version five', false],
    ['v', false],
  ])('the pre-gate on "%s" lets it through: %s', async (summary, through) => {
    write([artifact({ summary, detail: 'no numbers here' })]);
    const provider = fake(() => ({ ok: true, text: JSON.stringify({ eligible: false, reason: 'no_versions' }), usage: { tokens_in: null, tokens_out: null } }));
    await run(provider);
    expect(provider.calls.length).toBe(through ? 1 : 0);
  });
});

describe('bad records', () => {
  it('reports and skips a record that is not valid JSON or has no id', async () => {
    mkdirSync(source, { recursive: true });
    writeFileSync(path.join(source, 'broken.json'), '{"id": "01JD');
    writeFileSync(path.join(source, 'noid.json'), JSON.stringify({ summary: 'Node 20.1' }));
    // An id is a key, indexed by every backend: past 1 KiB it is no key (PostgreSQL's index failed the whole run on one).
    writeFileSync(path.join(source, 'longid.json'), JSON.stringify({ ...artifact(), id: 'k'.repeat(3000) }));
    write([artifact()]);
    const { summary, notes } = await run(fake(() => ({ ok: true, text: JSON.stringify(candidate()), usage: { tokens_in: null, tokens_out: null } })));
    expect(summary.counts['proposed']).toBe(1);
    expect(notes.join('\n')).toMatch(/broken\.json: not valid JSON/);
    expect(notes.join('\n')).toMatch(/noid\.json: has no id/);
    expect(notes.join('\n')).toContain('longid.json: its id is 3000 bytes; a key is at most 1024 — skipped');
  });
});

describe('the shipped offline transform on the example artifacts', () => {
  it('proposes, declines for each reason, and skips by the pre-gate', async () => {
    const { Providers } = await import('../../engine/providers/index.js');
    const notes: string[] = [];
    const summary = await runStage(
      t.engine,
      stage,
      quietRun({
        concurrency: 4,
        useCache: true,
        note: (line) => notes.push(line),
        providers: new Providers(t.pipeline, { env: {}, now: () => t.engine.now(), concurrency: 4 }),
      }),
    );
    expect(summary.counts).toEqual({ proposed: 7, declined: 4, untouched: 0, already_handled: 0, skipped_by_pregate: 2 });
    expect(
      declined()
        .map((row) => row.reason)
        .sort(),
    ).toEqual(['no_resolution', 'no_versions', 'schema_invalid', 'transform_invalid']);
    expect(notes.join('\n')).toMatch(/a014-broken\.json: not valid JSON/);
  });
});
