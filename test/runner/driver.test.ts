/**
 * The one batch driver (engine/runner/driver.ts).
 *
 * A run's selection decides whether it claims at all: with nothing in its state it makes no claim
 * — on a large store a claim's first listing is a second pass over every proposal — and its
 * summary is what the selection counted; with work, it claims it.
 *
 * The claim window: up to 2 × concurrency units in a slot or waiting for one. Units past their slot
 * — their commit running or waiting — do not hold back the next claim, up to the store's commit
 * depth of them (its concurrency when the store names none; at most 4 × concurrency), and that many
 * commits run at once: slow commits never leave the slots idle, a store that shares its syncs among
 * concurrent commits (the file store) gets enough of them to share, and a run never holds more than
 * 2 × concurrency + the commit depth units at once.
 *
 * The commit phase: a unit's commit starts only after the unit that took its slot has sent its
 * requests (node:http writes them on process.nextTick) — at C = 1 and L = 100 ms that took
 * 1.10–1.11 × ideal down to 1.08.
 */
import { describe, expect, it, vi } from 'vitest';
import { Engine } from '../../engine/engine.js';
import { Providers } from '../../engine/providers/index.js';
import { Busy, EXIT } from '../../engine/errors.js';
import { runBatch, type StageRun } from '../../engine/runner/driver.js';
import { exitCodeOfRun } from '../../engine/runner/summary.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { runStage, stageRun } from '../../engine/stages/index.js';
import { MemoryStore } from '../../engine/store/memory-store.js';
import { tallyOf } from '../../engine/store/tally.js';
import { storeLayout } from '../../engine/store/open.js';
import type { Lease, Query } from '../../engine/store/types.js';
import { ulidGenerator } from '../../engine/util/ids.js';
import { fixedClock, proposalInput, quietRun, shippedPipeline, testEngine } from '../helpers.js';

/** A stage kind over plain records whose work is `work` (no plan, one outcome: done). */
function recordsKind(items: readonly string[], work: StageRun<string>['work']): StageRun<string> {
  return {
    outcomes: () => ['done'],
    noun: 'record',
    retryLabel: 'left',
    select: async () => ({ units: { items, keyOf: (item) => item }, total: items.length }),
    mustPlan: () => false,
    plan: async () => {
      throw new Error('no plan is asked for');
    },
    work,
  };
}

describe('a unit another live process holds past the wait', () => {
  it('is left for a retry and reported as held (exit 2), not refused (exit 1)', async () => {
    const t = await testEngine();
    const stage = t.pipeline.stages.find((each) => each.kind === 'judge')!;
    const notes: string[] = [];
    const kind = recordsKind(['a', 'b'], async (unit) => {
      if (unit === 'b') throw new Busy('b is locked by another process for over 15 s');
      return { outcome: 'done' };
    });
    const summary = await runBatch(t.engine, stage, kind, quietRun({ note: (line) => notes.push(line), heldGraceMs: 0 }));
    expect(summary.counts).toMatchObject({ done: 1, held_by_another_run: 1 });
    expect(summary.refused).toEqual([]);
    expect(summary.unjudged).toEqual(['b']);
    expect(notes).toContain('b: b is locked by another process for over 15 s — left for a retry (run again once that process is done)');
    expect(exitCodeOfRun([summary])).toBe(EXIT.unjudged);
  });

  it('a file system’s own EBUSY is a refusal: no other process holds the work', async () => {
    const t = await testEngine();
    const stage = t.pipeline.stages.find((each) => each.kind === 'judge')!;
    const kind = recordsKind(['a'], async () => {
      throw Object.assign(new Error('EBUSY: resource busy or locked, rename'), { code: 'EBUSY' });
    });
    const summary = await runBatch(t.engine, stage, kind, quietRun({ heldGraceMs: 0 }));
    expect(summary.refused).toEqual(['a']);
    expect(summary.counts['held_by_another_run'] ?? 0).toBe(0);
  });
});

describe('a run with nothing selected', () => {
  it('makes no claim, and makes claims once there is work', async () => {
    const t = await testEngine();
    const judge = t.pipeline.stages.find((stage) => stage.kind === 'judge')!;
    const claim = vi.spyOn(t.engine.store, 'claim');

    const idle = await runStage(t.engine, judge, quietRun());
    expect(claim).not.toHaveBeenCalled();
    expect(Object.values(idle.counts).every((n) => n === 0)).toBe(true);

    const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
    const confirmed = await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility: 'private' }, 'cli');
    expect(confirmed.kind).toBe('committed');
    const busy = await runStage(t.engine, judge, quietRun());
    expect(claim).toHaveBeenCalled();
    expect(Object.values(busy.counts).reduce((a, b) => a + b, 0)).toBe(1);
  });
});

describe('a run over the file store', () => {
  it('lists the store once: its claim pass takes the selection it just listed', async () => {
    const t = await testEngine();
    const judge = t.pipeline.stages.find((stage) => stage.kind === 'judge')!;
    const promote = t.pipeline.stages.find((stage) => stage.kind === 'promote')!;
    for (let i = 0; i < 3; i++) {
      const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
      const confirmed = await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility: 'private' }, 'cli');
      expect(confirmed.kind).toBe('committed');
    }
    // The store's scans (a listing of every proposal, each checked against its file).
    const scans = vi.spyOn(t.store as unknown as { scan: () => Promise<unknown> }, 'scan');
    const judged = await runStage(t.engine, { ...judge, then: undefined }, quietRun());
    expect(Object.values(judged.counts).reduce((a, b) => a + b, 0)).toBe(3);
    expect(scans).toHaveBeenCalledTimes(1);
    // The promote stage selects by status and claims those without its stamp: the same listing serves.
    scans.mockClear();
    const promoted = await runStage(t.engine, promote, quietRun());
    expect(Object.values(promoted.counts).reduce((a, b) => a + b, 0)).toBe(3);
    expect(scans).toHaveBeenCalledTimes(1);
  });
});

describe('the claim window', () => {
  /**
   * A run at concurrency 2 over 30 records whose work hands its slot on at once and whose commits
   * wait for a gate: how many units it takes (once it has taken `expected`, and 50 ms later), and how
   * many commits run at once, before the gate opens.
   */
  async function heldWhileCommitsWait(commitDepth: number | undefined, expected: number) {
    const t = await testEngine();
    // The store's own figure, replaced for this run (the driver reads it when the run starts).
    Object.defineProperty(t.store, 'commitDepth', { value: commitDepth, configurable: true });
    const stage = t.pipeline.stages.find((each) => each.kind === 'judge')!;
    const concurrency = 2;
    const items = Array.from({ length: 30 }, (_, i) => `record-${String(i).padStart(2, '0')}`);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let started = 0;
    let committing = 0;
    let mostCommitting = 0;
    const kind = recordsKind(items, async () => {
      started++;
      // The slot is handed on at once; the commit waits.
      return {
        finish: async () => {
          committing++;
          mostCommitting = Math.max(mostCommitting, committing);
          await gate;
          committing--;
          return { outcome: 'done' };
        },
      };
    });
    const run = runBatch(t.engine, stage, kind, quietRun({ concurrency }));
    await vi.waitFor(() => expect(started).toBe(expected));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = { started, committing };
    open();
    const summary = await run;
    expect(summary.counts['done']).toBe(items.length);
    return { concurrency, before, mostCommitting };
  }

  it('keeps taking work while commits wait, up to 2 × concurrency + the store’s commit depth units held', async () => {
    const { before, mostCommitting } = await heldWhileCommitsWait(7, 2 * 2 + 7);
    expect(before).toEqual({ started: 2 * 2 + 7, committing: 7 });
    expect(mostCommitting).toBe(7);
  });

  it('runs at least as many commits at once as the run’s concurrency, even for a store that names fewer', async () => {
    const { concurrency, before, mostCommitting } = await heldWhileCommitsWait(1, 3 * 2);
    expect(before).toEqual({ started: 3 * concurrency, committing: concurrency });
    expect(mostCommitting).toBe(concurrency);
  });

  it('lets no more than 4 × concurrency commits lag behind the slots, whatever the store’s depth', async () => {
    const { concurrency, before, mostCommitting } = await heldWhileCommitsWait(64, 6 * 2);
    expect(before).toEqual({ started: 6 * concurrency, committing: 4 * concurrency });
    expect(mostCommitting).toBe(4 * concurrency);
  });

  it('holds 3 × concurrency units, and runs as many commits as its concurrency, for a store that names no commit depth', async () => {
    const { concurrency, before, mostCommitting } = await heldWhileCommitsWait(undefined, 3 * 2);
    expect(before).toEqual({ started: 3 * concurrency, committing: concurrency });
    expect(mostCommitting).toBe(concurrency);
  });

  it('gives the file store more commits at once than a run’s default concurrency (they share their syncs)', async () => {
    const t = await testEngine();
    expect(t.store.commitDepth).toBeGreaterThan(8); // SPEC §7: --concurrency defaults to 8
  });
});

describe('the commit phase', () => {
  it('starts after the next unit’s requests have gone out (process.nextTick), not before', async () => {
    const t = await testEngine();
    const stage = t.pipeline.stages.find((each) => each.kind === 'judge')!;
    const items = ['a', 'b', 'c'];
    const events: string[] = [];
    const kind = recordsKind(items, async (unit) => {
      events.push(`${unit} work`);
      // As node:http does: a request is written to its socket on process.nextTick, which runs
      // only once the pending promise jobs are done.
      process.nextTick(() => events.push(`${unit} request sent`));
      // The answer comes later, from the event loop.
      await new Promise((resolve) => setTimeout(resolve, 5));
      return {
        finish: async () => {
          events.push(`${unit} commit`);
          return { outcome: 'done' };
        },
      };
    });
    const summary = await runBatch(t.engine, stage, kind, quietRun({ concurrency: 1 }));
    expect(summary.counts['done']).toBe(3);
    expect(events.indexOf('b request sent')).toBeLessThan(events.indexOf('a commit'));
    expect(events.indexOf('c request sent')).toBeLessThan(events.indexOf('b commit'));
  });
});

describe('work another run holds at the end of a run', () => {
  type Other = { store: MemoryStore; engine: Engine; leases: Lease[]; ids: string[] };
  /**
   * `total` confirmed proposals on a memory store, the first `held` of them claimed by another
   * handle (another run), and a judge run over them. `meanwhile` runs after the run's first `held`
   * (when its pass is done): what the other run does during the pause; `whileRetrying`, after each
   * claim by key the run makes. Returns the run's summary, the keys of each claim it made by key,
   * the ids and a reader of their status.
   */
  async function heldAtTheEnd(hooks: {
    meanwhile?: (other: Other) => Promise<void>;
    whileRetrying?: (other: Other, keys: readonly string[]) => Promise<void>;
    heldGraceMs?: number;
    total?: number;
    held?: number;
    limit?: number;
    stop?: AbortController;
  }) {
    const pipeline = await shippedPipeline();
    const store = new MemoryStore(storeLayout(pipeline));
    const engine = new Engine({ pipeline, store, clock: fixedClock(), ids: ulidGenerator() });
    const ids: string[] = [];
    for (let i = 0; i < (hooks.total ?? 2); i++) {
      const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
      const confirmed = await runReviewCommand(engine, findReviewCommand(pipeline, 'confirm')!, created.id, { visibility: 'private' }, 'cli');
      expect(confirmed.kind).toBe('committed');
      ids.push(created.id);
    }
    const judge = pipeline.stages.find((stage) => stage.kind === 'judge')!;
    const otherStore = store.reopen();
    const otherEngine = new Engine({ pipeline, store: otherStore, clock: fixedClock(), ids: ulidGenerator() });
    const heldIds = ids.slice(0, hooks.held ?? 1);
    const { leases } = await otherStore.claim(judge.name, { keys: heldIds }, heldIds.length, 60_000);
    expect(leases).toHaveLength(heldIds.length);
    const other: Other = { store: otherStore, engine: otherEngine, leases, ids: heldIds };
    const held = store.held.bind(store);
    let asked = 0;
    vi.spyOn(store, 'held').mockImplementation(async (...args) => {
      const answer = await held(...args);
      if (++asked === 1) await hooks.meanwhile?.(other);
      return answer;
    });
    const claim = store.claim.bind(store);
    const byKey: string[][] = [];
    vi.spyOn(store, 'claim').mockImplementation(async (...args) => {
      const claimed = await claim(...args);
      const queue = args[1];
      if ('keys' in queue) {
        byKey.push([...queue.keys]);
        await hooks.whileRetrying?.(other, queue.keys);
      }
      return claimed;
    });
    const summary = await runStage(
      engine,
      { ...judge, then: undefined },
      quietRun({
        heldGraceMs: hooks.heldGraceMs ?? 2000,
        ...(hooks.limit !== undefined ? { limit: hooks.limit } : {}),
        ...(hooks.stop ? { signal: hooks.stop.signal } : {}),
      }),
    );
    const status = async (id: string) => {
      const read = await store.read(id);
      return read.kind === 'found' ? read.stored.proposal.status : read.kind;
    };
    return { summary, byKey, ids, status, heldAsked: () => asked };
  }

  /** The other run moves `id` on (back to pending) and lets go of it: it finished with it. */
  async function finish(other: Other, id: string): Promise<void> {
    const moved = await runReviewCommand(other.engine, findReviewCommand(other.engine.pipeline, 'unconfirm')!, id, {}, 'cli');
    expect(moved.kind).toBe('committed');
    await other.store.release(other.leases.filter((lease) => lease.key === id));
  }

  it('does not claim what the other run finished during the pause (it is that run’s to report)', async () => {
    const { summary, byKey, ids, status } = await heldAtTheEnd({ meanwhile: (other) => finish(other, other.ids[0]!) });
    expect(byKey).toEqual([]);
    expect(summary.counts['held_by_another_run'] ?? 0).toBe(0);
    expect(summary.counts['approved']).toBe(1);
    expect(summary.unjudged).toEqual([]);
    expect(await status(ids[0]!)).toBe('pending');
    expect(await status(ids[1]!)).toBe('approved');
  });

  it('judges what the other run gave up during the pause (let go of, still in the queue)', async () => {
    const { summary, byKey, ids, status } = await heldAtTheEnd({
      meanwhile: (other) => other.store.release(other.leases), // as a run interrupted before it got to it
    });
    expect(byKey).toEqual([[ids[0]]]);
    expect(summary.counts['held_by_another_run'] ?? 0).toBe(0);
    expect(summary.unjudged).toEqual([]);
    for (const id of ids) expect(await status(id)).toBe('approved');
  });

  it('does not report what the other run finished while this run’s claim of it was refused, at the end of the grace', async () => {
    let asked = 0;
    const { summary, byKey, ids, status } = await heldAtTheEnd({
      heldGraceMs: 60,
      whileRetrying: async (other, keys) => {
        if (!keys.includes(other.ids[0]!) || asked++ > 0) return;
        await finish(other, other.ids[0]!);
        await new Promise((resolve) => setTimeout(resolve, 100)); // past the grace
      },
    });
    expect(byKey[0]).toEqual([ids[0]]);
    expect(summary.counts['held_by_another_run'] ?? 0).toBe(0);
    expect(summary.unjudged).toEqual([]);
    expect(await status(ids[0]!)).toBe('pending');
  });

  it('takes over what the other run still holds once its lease lapses, and judges it', async () => {
    const { summary, byKey, ids, status } = await heldAtTheEnd({
      meanwhile: async (other) => other.store.expireLease(other.leases[0]!), // as if its holder died
    });
    expect(byKey).toEqual([[ids[0]]]);
    expect(summary.unjudged).toEqual([]);
    for (const id of ids) expect(await status(id)).toBe('approved');
  });

  it('does not report as held what the other run finished while a unit it let lapse was taken over', async () => {
    // The other run holds two; one lease lapses and is taken over, and while that retry runs (past
    // the grace) the other run finishes the second.
    const { summary, byKey, ids, status } = await heldAtTheEnd({
      total: 3,
      held: 2,
      heldGraceMs: 100,
      meanwhile: async (other) => other.store.expireLease(other.leases[0]!),
      whileRetrying: async (other, keys) => {
        if (!keys.includes(other.ids[0]!)) return;
        await finish(other, other.ids[1]!);
        await new Promise((resolve) => setTimeout(resolve, 150));
      },
    });
    expect(byKey[0]).toEqual([ids[0], ids[1]]);
    expect(summary.counts['held_by_another_run'] ?? 0).toBe(0);
    expect(summary.unjudged).toEqual([]);
    expect(await status(ids[0]!)).toBe('approved');
    expect(await status(ids[1]!)).toBe('pending');
  });

  it('reports what the other run still holds after the grace, without claiming it from under it', async () => {
    const { summary, byKey, ids, status } = await heldAtTheEnd({ heldGraceMs: 200 });
    // Asked for by key while it was held (the claims were refused, a few times, with pauses
    // between: 20, 40 and 50 ms), never taken.
    expect(byKey.length).toBeGreaterThan(0);
    expect(byKey.length).toBeLessThanOrEqual(10);
    expect(byKey.every((keys) => keys.length === 1 && keys[0] === ids[0])).toBe(true);
    expect(summary.counts).toMatchObject({ held_by_another_run: 1 });
    expect(summary.unjudged).toEqual([ids[0]]);
    expect(await status(ids[0]!)).toBe('confirmed');
  });

  it('asks the store nothing more once the run is interrupted, or at its --limit', async () => {
    const stop = new AbortController();
    const interrupted = await heldAtTheEnd({ stop, meanwhile: async () => stop.abort() });
    expect(interrupted.summary.interrupted).toBe(true);
    expect(interrupted.heldAsked()).toBe(1);
    expect(interrupted.byKey).toEqual([]);
    const limited = await heldAtTheEnd({ limit: 1 });
    expect(limited.heldAsked()).toBe(0);
    expect(limited.byKey).toEqual([]);
    expect(limited.summary.counts['approved']).toBe(1);
  });
});

describe('a run’s selection', () => {
  it('is counted by a store that tallies, without a listing of the queue; a store that does not is listed', async () => {
    const pipeline = await shippedPipeline();
    const store = new MemoryStore(storeLayout(pipeline));
    const engine = new Engine({ pipeline, store, clock: fixedClock(), ids: ulidGenerator() });
    const judge = pipeline.stages.find((stage) => stage.kind === 'judge')!;
    const promote = pipeline.stages.find((stage) => stage.kind === 'promote')!;
    const confirm = async () => {
      const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
      expect((await runReviewCommand(engine, findReviewCommand(pipeline, 'confirm')!, created.id, { visibility: 'private' }, 'cli')).kind).toBe('committed');
    };
    // One approved and promoted, two approved and not promoted yet, three confirmed.
    await confirm();
    await runStage(engine, judge, quietRun());
    for (let i = 0; i < 2; i++) await confirm();
    await runStage(engine, { ...judge, then: undefined }, quietRun());
    for (let i = 0; i < 3; i++) await confirm();
    const providers = new Providers(pipeline, { env: {}, now: () => engine.now(), concurrency: 2 });
    const selections = async () => ({
      judge: await stageRun(engine, judge, providers).select(quietRun()),
      promote: await stageRun(engine, promote, providers).select(quietRun()),
    });
    const index = vi.spyOn(store, 'index');
    const listed = await selections();
    expect(index).toHaveBeenCalledTimes(2);
    expect(listed.judge.total).toBe(3);
    expect(listed.promote).toMatchObject({ total: 2, counted: { already_promoted: 1 } });

    // The same store, counting where it keeps them (as PostgreSQL does): asked once per selection,
    // and nothing is listed.
    const asked: Query[] = [];
    const counter = store.reopen();
    Object.defineProperty(store, 'tally', {
      value: (query: Query, mark?: string) => {
        asked.push(query);
        return tallyOf(counter, query, mark);
      },
    });
    index.mockClear();
    const tallied = await selections();
    expect(index).not.toHaveBeenCalled();
    expect(asked).toHaveLength(2);
    expect(tallied.judge.total).toBe(3);
    expect(tallied.promote).toMatchObject({ total: 2, counted: { already_promoted: 1 } });
  });
});
