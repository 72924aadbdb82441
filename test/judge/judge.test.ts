/**
 * The judge stage (SPEC §5.4) through the engine: rubric by visibility, unjudged = no write,
 * per-proposal commits only of the proposal as it was judged, untrusted verdicts, the answer cache
 * and promotion right after a verdict.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { JudgeStageDef } from '../../engine/config/types.js';
import type { Provider, ProviderRequest, ProviderResult } from '../../engine/providers/types.js';
import { judgeWithProviders, judgeWithVerdicts } from '../../engine/stages/judge.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { proposalInput, proposalJson, SECRET_FILE, storedOf, testEngine, type TestEngine, quietRun } from '../helpers.js';
import { openFileStore } from '../../engine/store/open.js';

let t: TestEngine;
let stage: JudgeStageDef;
beforeEach(async () => {
  t = await testEngine();
  stage = t.pipeline.stages.find((candidate) => candidate.kind === 'judge') as JudgeStageDef;
});

type Answer = (request: ProviderRequest) => ProviderResult | Promise<ProviderResult>;

/** A provider with a scripted answer that counts its calls; `kind` decides caching and parsing. */
function fake(name: string, answer: Answer, kind: Provider['kind'] = 'command'): Provider & { calls: ProviderRequest[] } {
  const calls: ProviderRequest[] = [];
  return {
    name,
    kind,
    paid: kind !== 'checks',
    model: 'test-model',
    deterministic: kind === 'checks',
    calls,
    async call(request) {
      calls.push(request);
      return answer(request);
    },
  };
}

const allGood = { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 0.95 };
const usage = { tokens_in: 120, tokens_out: 30 };
const text = (value: unknown): ProviderResult => ({ ok: true, text: typeof value === 'string' ? value : JSON.stringify(value), usage });
const verdict = (passed = true, scores: Record<string, number> = allGood, score = 0.9) =>
  text({ score, passed, criterion_scores: scores, feedback_summary: 'fine' });

function panel(standard: Answer, adversarial: Answer = standard) {
  const providers = { standard: fake('std', standard), adversarial: fake('adv', adversarial) };
  const source = { get: (name: string) => (name === 'standard-checks' ? providers.standard : providers.adversarial) };
  return { providers, source };
}

async function confirmed(visibility: string, overrides: Record<string, unknown> = {}, args: Record<string, unknown> = {}): Promise<string> {
  const created = await t.engine.propose(proposalInput(overrides), { stage: 'test', actor: 'cli' });
  if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
  const outcome = await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility, ...args }, 'cli');
  if (outcome.kind !== 'committed') throw new Error(JSON.stringify(outcome));
  return created.id;
}

const file = (id: string) => path.join(t.storeDir, 'proposals', `${id}.json`);
const read = (id: string) => proposalJson(t.storeDir, id);
const stored = (id: string) => storedOf(t.store, id);

async function judge(id: string, source: { get(name: string): Provider }, useCache = true) {
  return judgeWithProviders(t.engine, stage, await stored(id), { providers: source, useCache, actor: 'run' });
}

async function expectUnjudged(id: string, run: () => Promise<{ outcome: { kind: string } }>, reason: RegExp) {
  const before = readFileSync(file(id), 'utf8');
  const result = await run();
  expect(result.outcome.kind).toBe('unjudged');
  expect((result.outcome as unknown as { reason: string }).reason).toMatch(reason);
  expect(readFileSync(file(id), 'utf8')).toBe(before);
  expect(existsSync(path.join(t.storeDir, 'approved', `${id}.json`))).toBe(false);
}

describe('rubric by visibility', () => {
  it('selects a rubric only by a key of the map itself: a value named like an inherited property (toString, constructor) has no rubric', async () => {
    // A pipeline whose visibility is free text (no revalidation) must still refuse what its map does not name.
    const open = { ...stage, revalidate: undefined };
    for (const visibility of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
      const id = await confirmed('org');
      writeFileSync(file(id), `${JSON.stringify({ ...read(id), visibility }, null, 2)}\n`);
      const { providers, source } = panel(() => verdict());
      const result = await judgeWithProviders(t.engine, open, await stored(id), { providers: source, useCache: false, actor: 'run' });
      expect(result.outcome).toMatchObject({ kind: 'refused' });
      expect((result.outcome as { message: string }).message).toMatch(new RegExp(`visibility "${visibility}" has no rubric`));
      expect(read(id)).toMatchObject({ status: 'confirmed', visibility });
      expect(read(id)['verdict']).toBeUndefined();
      expect(providers.standard.calls).toHaveLength(0);
    }
  });

  it('approves a private proposal at once with no provider call', async () => {
    const id = await confirmed('private');
    const { providers, source } = panel(() => {
      throw new Error('a provider was called for a private proposal');
    });
    const result = await judge(id, source);
    expect(result.outcome).toMatchObject({ kind: 'committed', to: 'approved' });
    expect(providers.standard.calls).toHaveLength(0);
    expect(providers.adversarial.calls).toHaveLength(0);
    const value = read(id);
    expect(value.verdict).toEqual({
      rubric_id: null,
      gate_policy: null,
      score_threshold: null,
      aggregate_score: null,
      passed: true,
      reason: 'private_no_jury',
      judges: [],
    });
    expect(value.judged_at).toMatch(/Z$/);
  });

  it('judges org with lesson-promotion and public with lesson-promotion-public, one call per seat', async () => {
    const orgId = await confirmed('org');
    const pubId = await confirmed('public');
    const { providers, source } = panel(() => verdict());
    await judge(orgId, source);
    await judge(pubId, source);
    expect(read(orgId).verdict).toMatchObject({
      rubric_id: 'lesson-promotion',
      gate_policy: 'majority',
      score_threshold: 0.75,
      passed: true,
      reason: 'gate_passed',
    });
    expect(read(pubId).verdict).toMatchObject({ rubric_id: 'lesson-promotion-public', passed: true });
    expect(providers.standard.calls.map((call) => call.env['PIPELINE_JUDGE_TYPE'])).toEqual(['standard', 'standard']);
    expect(providers.adversarial.calls.map((call) => call.env['PIPELINE_PROPOSAL_ID'])).toEqual([orgId, pubId]);
  });

  it('records each validated judge with its usage and the seat as judge_type', async () => {
    const id = await confirmed('org');
    const { source } = panel(() =>
      text({ judge_type: 'supreme', score: 0.9, passed: true, criterion_scores: { ...allGood, charm: 1 }, status: 'approved', extra: 'x' }),
    );
    await judge(id, source);
    expect(read(id).verdict.judges).toEqual([
      { judge_type: 'standard', score: 0.9, passed: true, criterion_scores: { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9 }, usage },
      { judge_type: 'adversarial', score: 0.9, passed: true, criterion_scores: { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9 }, usage },
    ]);
  });

  it('rejects a split panel with jury_not_majority and keeps the file', async () => {
    const id = await confirmed('org');
    const { source } = panel(
      () => verdict(true),
      () => verdict(false),
    );
    const result = await judge(id, source);
    expect(result.outcome).toMatchObject({ kind: 'committed', to: 'rejected' });
    expect(read(id).verdict).toMatchObject({ passed: false, reason: 'jury_not_majority' });
  });

  it('rejects public disclosure 0.4 with criterion_floor / failed_criterion disclosure', async () => {
    const id = await confirmed('public');
    const { source } = panel(
      () => verdict(true, { ...allGood, disclosure: 1 }),
      () => verdict(true, { ...allGood, disclosure: 0.4 }),
    );
    await judge(id, source);
    expect(read(id).verdict).toMatchObject({ passed: false, reason: 'criterion_floor', failed_criterion: 'disclosure' });
    expect(read(id).status).toBe('rejected');
  });

  it('reads verdicts wrapped in prose and code fences', async () => {
    const id = await confirmed('org');
    const { source } = panel(() =>
      text(`Here is my verdict:\n\n\`\`\`json\n${JSON.stringify({ score: 0.9, passed: true, criterion_scores: allGood })}\n\`\`\`\nThanks.`),
    );
    expect((await judge(id, source)).outcome).toMatchObject({ kind: 'committed', to: 'approved' });
  });
});

describe('could not be judged: no transition, nothing written', () => {
  it.each([
    ['an unparseable answer', () => text('I think it is fine.'), /not JSON/],
    ['a wrong-typed passed', () => text({ score: 0.9, passed: 'yes', criterion_scores: allGood }), /passed is not true or false/],
    ['a score out of range', () => text({ score: 30, passed: true, criterion_scores: allGood }), /outside \[0, 1\]/],
    [
      'a criterion score out of range',
      () => text({ score: 0.9, passed: true, criterion_scores: { ...allGood, disclosure: 30 } }),
      /disclosure score 30 is outside/,
    ],
    ['an outage', () => ({ ok: false as const, outage: 'HTTP 503 (gave up after 3 attempts)' }), /no usable answer: HTTP 503/],
    ['an over-large answer', () => text(`{"score": 0.9, "pad": "${'x'.repeat(1024 * 1024)}"}`), /larger than/],
  ])('with %s from one judge', async (_name, answer, reason) => {
    const id = await confirmed('public');
    const { source } = panel(() => verdict(), answer as Answer);
    await expectUnjudged(id, () => judge(id, source), reason);
    expect(read(id).status).toBe('confirmed');
  });

  it('when a floored criterion was scored by no judge', async () => {
    const id = await confirmed('public');
    const { grounding, scope_accuracy, generality } = allGood;
    const { source } = panel(() => verdict(true, { grounding, scope_accuracy, generality }));
    await expectUnjudged(id, () => judge(id, source), /disclosure has a floor/);
  });

  it('when the proposal changed while it was being judged (a human unconfirm wins)', async () => {
    const id = await confirmed('org');
    const { source } = panel(
      async () => {
        await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'unconfirm')!, id, {}, 'cli');
        return verdict();
      },
      () => verdict(),
    );
    const result = await judge(id, source);
    expect(result.outcome).toMatchObject({ kind: 'unjudged', reason: 'the proposal changed while it was being judged' });
    expect(read(id).status).toBe('pending');
    expect(read(id)).not.toHaveProperty('verdict');
  });

  it.each([
    ['one judge', [{ judge_type: 'standard', score: 0.9, passed: true, criterion_scores: allGood }]],
    ['three judges', ['standard', 'adversarial', 'standard'].map((judge_type) => ({ judge_type, score: 0.9, passed: true, criterion_scores: allGood }))],
    ['two of one type', ['standard', 'standard'].map((judge_type) => ({ judge_type, score: 0.9, passed: true, criterion_scores: allGood }))],
    ['an empty panel', []],
    ['not an array', { judge_type: 'standard' }],
    ['a string element', ['standard', { judge_type: 'adversarial', score: 0.9, passed: true, criterion_scores: allGood }]],
  ])('for external verdicts: %s', async (_name, verdicts) => {
    const id = await confirmed('org');
    await expectUnjudged(id, async () => judgeWithVerdicts(t.engine, stage, await stored(id), { ok: true, value: verdicts }, { actor: 'cli' }), /./);
  });

  it('for external verdicts that reach a proposal changed since it was read (confirmed again at another visibility): never a verdict under the old rubric', async () => {
    const id = await confirmed('org');
    // `judge --verdicts -` has read the proposal and waits for its input; meanwhile a person moves it to the public tier.
    const asRead = await stored(id);
    for (const [command, args] of [
      ['unconfirm', {}],
      ['confirm', { visibility: 'public' }],
    ] as const)
      expect((await runReviewCommand(t.engine, findReviewCommand(t.pipeline, command)!, id, args, 'cli')).kind).toBe('committed');
    const orgPanel = ['standard', 'adversarial'].map((judge_type) => ({ judge_type, score: 0.9, passed: true, criterion_scores: allGood }));
    const result = await judgeWithVerdicts(t.engine, stage, asRead, { ok: true, value: orgPanel }, { actor: 'cli' });
    expect(result.outcome).toMatchObject({ kind: 'unjudged', reason: 'the proposal changed while it was being judged' });
    expect(read(id)).toMatchObject({ status: 'confirmed', visibility: 'public' });
    expect(read(id)).not.toHaveProperty('verdict');
  });

  it('for external verdicts that are not a JSON array, even at a tier with no jury', async () => {
    const id = await confirmed('private');
    await expectUnjudged(
      id,
      async () => judgeWithVerdicts(t.engine, stage, await stored(id), { ok: false, reason: 'the verdicts are not valid JSON' }, { actor: 'cli' }),
      /not valid JSON/,
    );
    await expectUnjudged(
      id,
      async () => judgeWithVerdicts(t.engine, stage, await stored(id), { ok: true, value: 'approve' }, { actor: 'cli' }),
      /not a JSON array/,
    );
    const approved = await judgeWithVerdicts(t.engine, stage, await stored(id), { ok: true, value: [] }, { actor: 'cli' });
    expect(approved.outcome).toMatchObject({ kind: 'committed', to: 'approved' });
  });
});

describe('refusals', () => {
  it('refuses to judge again, naming the status', async () => {
    const id = await confirmed('org');
    const { source, providers } = panel(() => verdict());
    await judge(id, source);
    const before = readFileSync(file(id), 'utf8');
    const again = await judge(id, source);
    expect(again.outcome).toMatchObject({ kind: 'refused' });
    expect((again.outcome as { message: string }).message).toMatch(new RegExp(`${id} is approved`));
    expect(readFileSync(file(id), 'utf8')).toBe(before);
    expect(providers.standard.calls).toHaveLength(1);
  });

  it('validates again against the confirmed schema before any jury (a hand edit cannot reach the pool)', async () => {
    for (const visibility of ['private', 'org']) {
      const id = await confirmed(visibility);
      const value = read(id);
      value.candidate.applies_to.scope.versions = { pnpm: '^8' };
      writeFileSync(file(id), `${JSON.stringify(value, null, 2)}\n`);
      const before = readFileSync(file(id), 'utf8');
      const { source, providers } = panel(() => verdict());
      const result = await judge(id, source);
      expect(result.outcome).toMatchObject({ kind: 'refused', code: 'schema_invalid' });
      expect(readFileSync(file(id), 'utf8')).toBe(before);
      expect(providers.standard.calls).toHaveLength(0);
    }
  });

  it('refuses, by name, a proposal nested far deeper than any real one, before any jury', async () => {
    const id = await confirmed('org');
    const deep = readFileSync(file(id), 'utf8').replace(/\n}\n$/, `,\n  "deep": ${'['.repeat(100_000)}${']'.repeat(100_000)}\n}\n`);
    writeFileSync(file(id), deep);
    const { source, providers } = panel(() => verdict());
    const result = await judge(id, source);
    expect(result.outcome).toMatchObject({
      kind: 'refused',
      code: 'schema_invalid',
      message: `${id} (confirmed) nests more than 256 levels deep; it was not judged`,
    });
    expect(readFileSync(file(id), 'utf8')).toBe(deep);
    expect(providers.standard.calls).toHaveLength(0);
  });

  it('after a verdict, unconfirm is refused for approved and for rejected', async () => {
    const approved = await confirmed('org');
    const rejected = await confirmed('org');
    await judge(approved, panel(() => verdict()).source);
    await judge(rejected, panel(() => verdict(false)).source);
    for (const [id, status] of [
      [approved, 'approved'],
      [rejected, 'rejected'],
    ] as const) {
      const outcome = await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'unconfirm')!, id, {}, 'cli');
      expect(outcome.kind === 'refused' && outcome.message).toMatch(new RegExp(`${id} is ${status}`));
    }
  });
});

/** A confirmed proposal whose first judging kept the adversarial seat's answer (the standard one was out): the id and that answer's cache key. */
async function keptAdversarialAnswer(): Promise<{ id: string; key: string }> {
  const { cacheKey } = await import('../../engine/providers/call.js');
  const id = await confirmed('org');
  const first = panel(
    () => ({ ok: false, outage: 'HTTP 503' }),
    () => verdict(),
  );
  await judge(id, first.source);
  const call = first.providers.adversarial.calls[0]!;
  return { id, key: cacheKey(first.providers.adversarial, call.prompt, '1', call.env) };
}

describe('the answer cache', () => {
  it('pays for nothing twice: a re-run uses the validated answers already paid for', async () => {
    const id = await confirmed('org');
    const first = panel(
      () => ({ ok: false, outage: 'HTTP 503' }),
      () => verdict(),
    );
    await judge(id, first.source);
    expect(first.providers.adversarial.calls).toHaveLength(1);
    const second = panel(
      () => verdict(),
      () => verdict(),
    );
    const result = await judge(id, second.source);
    expect(result.outcome.kind).toBe('committed');
    expect(second.providers.adversarial.calls).toHaveLength(0);
    expect(second.providers.standard.calls).toHaveLength(1);
    expect(result.spent).toEqual([usage]);
  });

  it('reads a cached answer as untrusted: its usage is whole token counts or null, nothing else', async () => {
    const { id, key } = await keptAdversarialAnswer();
    // Someone who can write the store rewrites the kept answer's usage.
    const kept = (await t.engine.store.cache.get(key)) as { text: string };
    expect(kept.text).toContain('"passed":true');
    await t.engine.store.cache.put(key, { text: kept.text, usage: { tokens_in: 'x'.repeat(20), tokens_out: 1e308, evil: { nested: [1] } } });
    const second = panel(
      () => verdict(),
      () => verdict(),
    );
    expect((await judge(id, second.source)).outcome.kind).toBe('committed');
    expect(second.providers.adversarial.calls).toHaveLength(0);
    expect(read(id).verdict.judges.map((judge: { usage: unknown }) => judge.usage)).toEqual([usage, { tokens_in: null, tokens_out: null }]);
  });

  it('asks again, once, when a kept answer is no verdict (the cache edited), and keeps the new answer in its place', async () => {
    const { id, key } = await keptAdversarialAnswer();
    await t.engine.store.cache.put(key, { text: JSON.stringify({ score: 7, passed: true }), usage });
    const second = panel(
      () => verdict(),
      () => verdict(),
    );
    expect((await judge(id, second.source)).outcome.kind).toBe('committed');
    expect(second.providers.adversarial.calls).toHaveLength(1);
    const kept = (await t.engine.store.cache.get(key)) as { text: string };
    expect(JSON.parse(kept.text)).toMatchObject({ score: 0.9, passed: true });
  });

  const withoutGrounding = { scope_accuracy: 0.9, generality: 0.9 };
  /** A confirmed proposal whose first judging kept an adversarial answer that scores no grounding (the standard judge was out). */
  async function keptAnswerWithoutGrounding(): Promise<string> {
    const id = await confirmed('org');
    await judge(
      id,
      panel(
        () => ({ ok: false, outage: 'HTTP 503' }),
        () => verdict(true, withoutGrounding),
      ).source,
    );
    return id;
  }

  it('asks the seats served from the cache again, once, when the kept answers together decide nothing (a floored criterion no judge scored)', async () => {
    const id = await keptAnswerWithoutGrounding();
    // The next: the standard judge scores no grounding either. With the kept answer the panel
    // decides nothing — so the adversarial judge is asked again, and its fresh answer decides.
    const second = panel(
      () => verdict(true, withoutGrounding),
      () => verdict(),
    );
    expect((await judge(id, second.source)).outcome.kind).toBe('committed');
    expect([second.providers.standard.calls.length, second.providers.adversarial.calls.length]).toEqual([1, 1]);
    expect(read(id).status).toBe('approved');
  });

  it('asks a kept seat again only once: fresh answers that still decide nothing leave the proposal unjudged', async () => {
    const id = await keptAnswerWithoutGrounding();
    const second = panel(() => verdict(true, withoutGrounding));
    const result = await judge(id, second.source);
    expect(result.outcome).toMatchObject({ kind: 'unjudged', reason: expect.stringContaining('grounding') });
    expect([second.providers.standard.calls.length, second.providers.adversarial.calls.length]).toEqual([1, 1]);
  });

  it('keys an answer by where it came from too: a provider whose command or server changed under the same name is asked again', async () => {
    const { callProvider } = await import('../../engine/providers/call.js');
    const request = { purpose: 'judge' as const, prompt: 'judge this', input: {}, env: {} };
    const before = { ...fake('judge', () => verdict()), source: '["claude","-p"]' };
    const first = await callProvider(t.engine.store.cache, before, request, { useCache: true });
    expect(first.ok && !first.cached).toBe(true);
    if (first.ok) await first.keep();
    const same = { ...fake('judge', () => verdict()), source: '["claude","-p"]' };
    expect((await callProvider(t.engine.store.cache, same, request, { useCache: true })).ok && same.calls).toHaveLength(0);
    const other = { ...fake('judge', () => verdict()), source: '["ollama","run","llama3"]' };
    expect((await callProvider(t.engine.store.cache, other, request, { useCache: true })).ok && other.calls).toHaveLength(1);
    // The real providers name their source: a command's words; a URL, without user-info (a rotated password is the same server).
    const { createCommandProvider } = await import('../../engine/providers/command.js');
    const { createOpenAIProvider } = await import('../../engine/providers/openai.js');
    const settings = { timeoutMs: 1000, attempts: 1, retryAfterCapMs: 0, maxAnswerBytes: 1024, env: {} } as never;
    expect(createCommandProvider('c', { kind: 'command', command: 'claude  -p' } as never, settings).source).toBe('["claude","-p"]');
    const openai = (base_url: string) => createOpenAIProvider('o', { kind: 'openai', base_url, model: 'm' } as never, settings).source;
    expect(openai('http://u:one@localhost:1/v1')).toBe(openai('http://u:two@localhost:1/v1/'));
    expect(openai('http://localhost:1/v1')).not.toBe(openai('http://localhost:2/v1'));
  });

  it('keys a program’s answer by the proposal and seat it was told of too: one prompt for two proposals is two answers', async () => {
    const { callProvider } = await import('../../engine/providers/call.js');
    const env = (id: string) => ({ PIPELINE_STAGE: 'judge', PIPELINE_JUDGE_TYPE: 'standard', PIPELINE_PROPOSAL_ID: id });
    // A program that looks the proposal up by its id (the prompt names none): each proposal its own answer.
    const program = { ...fake('judge', (request) => verdict(request.env['PIPELINE_PROPOSAL_ID'] === 'A')), readsEnv: true };
    const ask = async (id: string) => {
      const called = await callProvider(
        t.engine.store.cache,
        program,
        { purpose: 'judge', prompt: 'judge the proposal', input: {}, env: env(id) },
        { useCache: true },
      );
      if (called.ok) await called.keep();
      return called.ok && (called.value as { passed: boolean }).passed;
    };
    expect([await ask('A'), await ask('B'), await ask('A'), await ask('B')]).toEqual([true, false, true, false]);
    expect(program.calls).toHaveLength(2);
    // A server is told nothing of the proposal but the prompt: its answer to one prompt serves every proposal that sends it.
    const server = fake('judge', () => verdict(), 'openai');
    for (const id of ['A', 'B']) {
      const called = await callProvider(
        t.engine.store.cache,
        server,
        { purpose: 'judge', prompt: 'judge the proposal', input: {}, env: env(id) },
        { useCache: true },
      );
      if (called.ok) await called.keep();
    }
    expect(server.calls).toHaveLength(1);
    const { createCommandProvider } = await import('../../engine/providers/command.js');
    const settings = { timeoutMs: 1000, attempts: 1, retryAfterCapMs: 0, maxAnswerBytes: 1024, env: {} } as never;
    expect(createCommandProvider('c', { kind: 'command', command: 'claude -p' } as never, settings).readsEnv).toBe(true);
  });

  it('commits the verdict when the answers cannot be cached: the cache is never required', async () => {
    const id = await confirmed('org');
    const cache = t.engine.store.cache;
    const put = cache.put;
    cache.put = async () => {
      throw new Error('no space left on device');
    };
    try {
      const result = await judge(
        id,
        panel(
          () => verdict(),
          () => verdict(),
        ).source,
      );
      expect(result.outcome.kind).toBe('committed');
    } finally {
      cache.put = put;
    }
  });

  it('asks the judges when the cache cannot be read: a failing lookup is a miss, on any backend', async () => {
    const id = await confirmed('org');
    const cache = t.engine.store.cache;
    const get = cache.get;
    cache.get = async () => {
      throw new Error('permission denied for table cache');
    };
    try {
      const asked = panel(
        () => verdict(),
        () => verdict(),
      );
      expect((await judge(id, asked.source)).outcome.kind).toBe('committed');
      expect(asked.providers.standard.calls.length + asked.providers.adversarial.calls.length).toBe(2);
    } finally {
      cache.get = get;
    }
  });

  it('never caches an answer that failed validation, and --no-cache bypasses the cache', async () => {
    const id = await confirmed('org');
    await judge(
      id,
      panel(
        () => text({ score: 2, passed: true }),
        () => verdict(),
      ).source,
    );
    const second = panel(
      () => verdict(),
      () => verdict(),
    );
    const { readdirSync } = await import('node:fs');
    const cached = readdirSync(path.join(t.storeDir, 'cache')).length;
    await judge(id, second.source, false);
    expect(second.providers.standard.calls).toHaveLength(1);
    expect(second.providers.adversarial.calls).toHaveLength(1);
    expect(readdirSync(path.join(t.storeDir, 'cache'))).toHaveLength(cached);
  });
});

describe('token usage', () => {
  it('keeps null for unknown usage, never 0', async () => {
    const id = await confirmed('org');
    const { source } = panel(() => ({
      ok: true,
      text: JSON.stringify({ score: 0.9, passed: true, criterion_scores: allGood }),
      usage: { tokens_in: null, tokens_out: null },
    }));
    await judge(id, source);
    expect(read(id).verdict.judges[0].usage).toEqual({ tokens_in: null, tokens_out: null });
  });
});

describe('the shipped offline judges', () => {
  it('score every criterion of the rubric they serve, so a valid proposal is always judged', async () => {
    const { Providers } = await import('../../engine/providers/index.js');
    const providers = new Providers(t.pipeline, { env: {}, now: () => t.engine.now(), concurrency: 2 });
    for (const visibility of ['org', 'public']) {
      const id = await confirmed(visibility);
      const result = await judge(id, providers);
      expect(result.outcome.kind).toBe('committed');
      for (const judge of read(id).verdict.judges) {
        const rubric = t.pipeline.rubrics.get(read(id).verdict.rubric_id)!;
        expect(Object.keys(judge.criterion_scores).sort()).toEqual(rubric.criteria.map((criterion) => criterion.name).sort());
      }
    }
  });

  it('reject a public proposal that leaks a token, for its disclosure floor', async () => {
    const { Providers } = await import('../../engine/providers/index.js');
    const providers = new Providers(t.pipeline, { env: {}, now: () => t.engine.now(), concurrency: 2 });
    const id = await confirmed('public', {
      rationale: 'Publishing failed until the token was set: api_key=pypi-AgEIcHlwaS5vcmcCJGM3ZTYx in the release script.',
    });
    await judge(id, providers);
    expect(read(id).verdict).toMatchObject({ passed: false, reason: 'criterion_floor', failed_criterion: 'disclosure' });
  });
});

describe('runs', () => {
  it('leave a proposal another run holds to that run, say so, and count it as left for a retry', async () => {
    const { runStage } = await import('../../engine/stages/index.js');
    const held = await confirmed('org');
    const free = await confirmed('org');
    const other = openFileStore(t.pipeline, t.storeDir);
    const claim = await other.claim(stage.name, { keys: [held] }, 1, 60_000);
    const notes: string[] = [];
    const summary = await runStage(
      t.engine,
      stage,
      quietRun({
        useCache: true,
        cwd: t.storeDir,
        note: (line) => notes.push(line),
        providers: panel(() => verdict()).source,
        heldGraceMs: 50,
      }),
    );
    await other.release(claim.leases);
    expect(summary.counts).toMatchObject({ approved: 1, held_by_another_run: 1 });
    expect(summary.unjudged).toEqual([held]);
    expect(read(held).status).toBe('confirmed');
    expect(read(free).status).toBe('approved');
    expect(notes.join('\n')).toMatch(new RegExp(`${held}: another run still holds it`));
  });
});

/** The proposal file `id` replaced by `text` (by hand, as it were) when a run makes its first claim. */
function breakOnClaim(id: string, text: string): void {
  const claim = t.engine.store.claim.bind(t.engine.store);
  t.engine.store.claim = async (...args) => {
    writeFileSync(path.join(t.storeDir, 'proposals', `${id}.json`), text);
    return claim(...args);
  };
  onTestFinished(() => {
    t.engine.store.claim = claim;
  });
}

describe('a proposal file that breaks during a run', () => {
  it('is reported by id and skipped: never counted, never refused (SPEC §4)', async () => {
    const { runStage } = await import('../../engine/stages/index.js');
    const broken = await confirmed('org');
    const whole = await confirmed('org');
    breakOnClaim(broken, ''); // emptied by hand after the run selected it, before it claims it
    const notes: string[] = [];
    const summary = await runStage(t.engine, stage, quietRun({ note: (line) => notes.push(line), providers: panel(() => verdict()).source }));
    expect(summary.counts).toMatchObject({ approved: 1, refused: 0 });
    expect(summary.refused).toEqual([]);
    expect(read(whole).status).toBe('approved');
    expect(notes.join('\n')).toMatch(new RegExp(`${broken}: the proposal file is .* skipped, left as it is`));
    expect(readFileSync(path.join(t.storeDir, 'proposals', `${broken}.json`), 'utf8')).toBe('');
  });

  it('is skipped the same way by a promote run', async () => {
    const { runStage } = await import('../../engine/stages/index.js');
    const promote = t.pipeline.stages.find((candidate) => candidate.kind === 'promote')!;
    const ids = [await confirmed('org'), await confirmed('org')];
    const detached = { ...stage, then: undefined };
    expect((await runStage(t.engine, detached, quietRun({ providers: panel(() => verdict()).source }))).counts).toMatchObject({ approved: 2 });
    const [broken, whole] = ids as [string, string];
    breakOnClaim(broken, '{"status": "appro');
    const notes: string[] = [];
    const summary = await runStage(t.engine, promote, quietRun({ note: (line) => notes.push(line) }));
    expect(summary.refused).toEqual([]);
    expect(summary.counts['refused'] ?? 0).toBe(0);
    expect(read(whole).promoted_at).toBeDefined();
    expect(notes.join('\n')).toMatch(new RegExp(`${broken}: the proposal file is .* skipped, left as it is`));
  });
});

describe('a proposal file that breaks between its read and its commit', () => {
  it('is reported by id and skipped by a promote run, not refused', async () => {
    const { runStage } = await import('../../engine/stages/index.js');
    const promote = t.pipeline.stages.find((candidate) => candidate.kind === 'promote')!;
    const [broken, whole] = [await confirmed('org'), await confirmed('org')];
    expect((await runStage(t.engine, { ...stage, then: undefined }, quietRun({ providers: panel(() => verdict()).source }))).counts).toMatchObject({
      approved: 2,
    });
    const commit = t.engine.store.commit.bind(t.engine.store);
    t.engine.store.commit = async (change) => {
      if (change.id === broken) writeFileSync(path.join(t.storeDir, 'proposals', `${broken}.json`), '');
      return commit(change);
    };
    onTestFinished(() => {
      t.engine.store.commit = commit;
    });
    const notes: string[] = [];
    const summary = await runStage(t.engine, promote, quietRun({ note: (line) => notes.push(line) }));
    expect(summary.refused).toEqual([]);
    expect(read(whole).promoted_at).toBeDefined();
    expect(notes.join('\n')).toMatch(new RegExp(`${broken}: the proposal file is .* skipped, left as it is`));
  });
});

describe('claims', () => {
  it('come in batches of at least the concurrency, while every slot stays busy', async () => {
    const { runStage } = await import('../../engine/stages/index.js');
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push(await confirmed('org'));
    const claims: number[] = [];
    const claim = t.engine.store.claim.bind(t.engine.store);
    t.engine.store.claim = async (...args) => {
      claims.push(args[2]);
      return claim(...args);
    };
    onTestFinished(() => {
      t.engine.store.claim = claim;
    });
    let inFlight = 0;
    let most = 0;
    const slow: Answer = async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      return verdict();
    };
    const summary = await runStage(t.engine, stage, quietRun({ concurrency: 4, providers: panel(slow).source }));
    expect(summary.counts).toMatchObject({ approved: 24 });
    // One claim per unit finished would be ~20 claims of 1 or 2; batches are 4 to 8.
    expect(claims.slice(0, -1).every((max) => max >= 4)).toBe(true);
    expect(claims.length).toBeLessThanOrEqual(24 / 4 + 2);
    // Both seats of 4 proposals at once: the batching never left a slot idle for long enough to show.
    expect(most).toBe(8);
  });
});

describe('promotion right after a verdict', () => {
  it('leaves the verdict when promotion fails, and promote later finishes it', async () => {
    writeFileSync(SECRET_FILE, 'not hex\n', { mode: 0o600 });
    onTestFinished(() => rmSync(SECRET_FILE, { force: true }));
    const { runStage } = await import('../../engine/stages/index.js');
    const id = await confirmed('org');
    const notes: string[] = [];
    const summary = await runStage(
      t.engine,
      stage,
      quietRun({ useCache: true, cwd: t.storeDir, note: (line) => notes.push(line), providers: panel(() => verdict()).source }),
    );
    expect(summary.counts['approved']).toBe(1);
    expect(notes.join('\n')).toMatch(/promotion failed: .*malformed/);
    expect(read(id).status).toBe('approved');
    expect(read(id)).not.toHaveProperty('promoted_at');
    expect(existsSync(path.join(t.storeDir, 'approved', `${id}.json`))).toBe(false);
  });
});
