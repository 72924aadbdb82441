/**
 * The graph model and `--format json` (SPEC §8): states in machine order with initial, terminal,
 * description, tags and the live count; one transition per (from, event, target) with the guard
 * name and its refusal message; idempotent repeats kept apart from the transitions.
 */
import { describe, expect, it } from 'vitest';
import { buildGraph, renderJson, toJson, withCounts } from '../../engine/viz/index.js';
import { proposalInput, shippedPipeline, testEngine } from '../helpers.js';
import { readSnapshot } from '../../engine/viz/index.js';
import { articleInput, EDITORIAL } from './fixtures.js';

describe('the graph model', () => {
  it('renders the shipped machine as exactly {states, transitions}', async () => {
    const { lifecycle } = await shippedPipeline();
    const text = renderJson(buildGraph(lifecycle));
    expect(text).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
    expect(JSON.parse(text)).toEqual({
      states: [
        { id: 'pending', initial: true, terminal: false, description: 'Written by the transform; nobody has looked at it yet.', tags: ['review'], count: 0 },
        { id: 'confirmed', initial: false, terminal: false, description: 'Confirmed with a visibility; waiting for the jury.', tags: ['judge'], count: 0 },
        {
          id: 'passed',
          initial: false,
          terminal: false,
          description: 'A person declined to share it. The file stays so the artifact is never proposed again.',
          tags: [],
          count: 0,
        },
        {
          id: 'approved',
          initial: false,
          terminal: false,
          description: 'Approved by the jury; promote writes its pool entry, and the pool counts how its use went.',
          tags: ['promote', 'pool'],
          count: 0,
        },
        {
          id: 'rejected',
          initial: false,
          terminal: true,
          description: 'Rejected by the jury; promote records it in declined.jsonl.',
          tags: ['terminal', 'promote'],
          count: 0,
        },
        {
          id: 'archived',
          initial: false,
          terminal: false,
          description: 'Taken out of use; its pool entry is in archived/, byte for byte, and restore puts it back.',
          tags: ['pool'],
          count: 0,
        },
      ],
      transitions: [
        {
          from: 'pending',
          to: 'confirmed',
          event: 'confirm',
          guard: 'jury_checks_independence',
          message: 'a private proposal runs no jury, so it cannot be version_independent (confirm at org or public)',
        },
        { from: 'pending', to: 'passed', event: 'pass', guard: null, message: null },
        { from: 'confirmed', to: 'pending', event: 'unconfirm', guard: null, message: null },
        { from: 'confirmed', to: 'approved', event: 'approve', guard: null, message: null },
        { from: 'confirmed', to: 'rejected', event: 'reject', guard: null, message: null },
        { from: 'passed', to: 'pending', event: 'unpass', guard: null, message: null },
        { from: 'approved', to: 'approved', event: 'record_outcome', guard: 'known_result', message: 'the result must be hit or miss' },
        {
          from: 'approved',
          to: 'approved',
          event: 'undo_outcome',
          guard: 'known_result & hit_to_undo & miss_to_undo',
          message: 'the result must be hit or miss; there is no hit to take back (hit_count is 0); there is no miss to take back (miss_count is 0)',
        },
        { from: 'approved', to: 'archived', event: 'archive', guard: null, message: null },
        { from: 'archived', to: 'approved', event: 'restore', guard: null, message: null },
      ],
    });
  });

  it('renders a second machine: guarded alternatives stay apart, two guards join with " & ", a self-transition is a transition', async () => {
    const { lifecycle } = await shippedPipeline(EDITORIAL);
    expect(JSON.parse(renderJson(buildGraph(lifecycle, { review: 2, published: 1 })))).toEqual({
      states: [
        { id: 'draft', initial: true, terminal: false, description: 'A writer is working on it.', tags: ['writer'], count: 0 },
        { id: 'review', initial: false, terminal: false, description: 'An editor reads it.', tags: ['editor', 'desk'], count: 2 },
        { id: 'scheduled', initial: false, terminal: false, description: 'Waiting for its slot.', tags: [], count: 0 },
        { id: 'published', initial: false, terminal: true, description: 'Out in the world.', tags: ['done'], count: 1 },
        { id: 'spiked', initial: false, terminal: true, description: 'Dropped by an editor.', tags: [], count: 0 },
        { id: 'withdrawn', initial: false, terminal: true, description: null, tags: [], count: 0 },
      ],
      transitions: [
        { from: 'draft', to: 'review', event: 'submit', guard: 'has_body', message: 'the article has no body yet' },
        { from: 'draft', to: 'withdrawn', event: 'withdraw', guard: null, message: null },
        { from: 'review', to: 'published', event: 'accept', guard: 'breaking', message: 'only breaking news skips the schedule' },
        {
          from: 'review',
          to: 'scheduled',
          event: 'accept',
          guard: 'has_slot & not_embargoed',
          message: 'an accepted article needs a slot (--slot); the article is under embargo',
        },
        { from: 'review', to: 'draft', event: 'request_changes', guard: null, message: null },
        { from: 'review', to: 'spiked', event: 'spike', guard: null, message: null },
        { from: 'scheduled', to: 'published', event: 'publish', guard: null, message: null },
        { from: 'scheduled', to: 'review', event: 'reopen', guard: null, message: null },
        { from: 'scheduled', to: 'scheduled', event: 'reschedule', guard: 'has_slot', message: 'an accepted article needs a slot (--slot)' },
      ],
    });
  });

  it('keeps idempotent repeats out of the json transitions, but in the model', async () => {
    const graph = buildGraph((await shippedPipeline()).lifecycle);
    expect(graph.repeats.map((r) => `${r.state}:${r.event}`)).toEqual([
      'pending:defer',
      'pending:unconfirm',
      'pending:unpass',
      'confirmed:confirm',
      'passed:pass',
    ]);
    for (const r of graph.repeats) expect(toJson(graph).transitions.some((t) => t.from === r.state && t.event === r.event)).toBe(false);
    for (const t of toJson(graph).transitions) expect(Object.keys(t)).toEqual(['from', 'to', 'event', 'guard', 'message']);
    for (const s of toJson(graph).states) expect(Object.keys(s)).toEqual(['id', 'initial', 'terminal', 'description', 'tags', 'count']);
  });

  it('merges alternatives to one target: their guards join with " | ", and an unguarded one makes the edge unguarded', async () => {
    const base = (await shippedPipeline()).lifecycle;
    const transitions = [
      { id: 0, from: 'pending', event: 'confirm', target: 'confirmed', guards: ['a', 'b'], effects: [] },
      { id: 1, from: 'pending', event: 'confirm', target: 'confirmed', guards: ['c'], effects: [] },
      { id: 2, from: 'pending', event: 'pass', target: 'passed', guards: ['a'], effects: [] },
      { id: 3, from: 'pending', event: 'pass', target: 'passed', guards: [], effects: [] },
    ];
    const guards = { a: { message: 'A', schema: true }, b: { message: 'B', schema: true }, c: { message: 'C', schema: true } };
    const lifecycle = { ...base, transitions, def: { ...base.def, guards } };
    expect(toJson(buildGraph(lifecycle)).transitions).toEqual([
      { from: 'pending', to: 'confirmed', event: 'confirm', guard: 'a & b | c', message: 'A; B; C' },
      { from: 'pending', to: 'passed', event: 'pass', guard: null, message: null },
    ]);
  });

  it('replaces counts without touching the rest', async () => {
    const graph = buildGraph((await shippedPipeline()).lifecycle, { pending: 3 });
    const next = withCounts(graph, { confirmed: 1 });
    expect(next.states.map((s) => s.count)).toEqual([0, 1, 0, 0, 0, 0]);
    expect(graph.states[0]!.count).toBe(3);
    expect(next.transitions).toBe(graph.transitions);
  });
});

describe('counts and proposals from the store', () => {
  it('counts every state of the shipped machine from the store, zeros included', async () => {
    const { engine, store, pipeline } = await testEngine();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      if (outcome.kind !== 'committed') throw new Error(outcome.kind);
      ids.push(outcome.id);
    }
    await engine.apply(ids[0]!, 'confirm', { visibility: 'org' }, { stage: 'review', actor: 'cli' });
    await engine.apply(ids[1]!, 'pass', {}, { stage: 'review', actor: 'cli' });
    const { snapshot } = await readSnapshot(store, pipeline.lifecycle.states, 'candidate.claim');
    const json = toJson(buildGraph(pipeline.lifecycle, snapshot.counts));
    expect(Object.fromEntries(json.states.map((s) => [s.id, s.count]))).toEqual({ pending: 1, confirmed: 1, passed: 1, approved: 0, rejected: 0, archived: 0 });
    expect(snapshot.proposals['confirmed']).toEqual([{ id: ids[0], title: 'pnpm 8 refuses lockfiles written by pnpm 7 until they are regenerated' }]);
    expect(snapshot.proposals['approved']).toEqual([]);
  });

  it('counts the second pipeline from its own store and lists at most the cap per state', async () => {
    const { engine, store, pipeline } = await testEngine({ dir: EDITORIAL });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const outcome = await engine.propose(articleInput(`Headline ${i}`), { stage: 'test', actor: 'cli' });
      if (outcome.kind !== 'committed') throw new Error(outcome.kind);
      ids.push(outcome.id);
    }
    expect((await engine.apply(ids[0]!, 'submit', {}, { stage: 'desk', actor: 'cli' })).kind).toBe('committed');
    const { snapshot } = await readSnapshot(store, pipeline.lifecycle.states, 'article.headline', 2);
    expect(snapshot.counts).toEqual({ draft: 3, review: 1, scheduled: 0, published: 0, spiked: 0, withdrawn: 0 });
    expect(snapshot.proposals['draft']).toEqual([
      { id: ids[1], title: 'Headline 1' },
      { id: ids[2], title: 'Headline 2' },
    ]);
    expect(snapshot.proposals['review']).toEqual([{ id: ids[0], title: 'Headline 0' }]);
  });
});
