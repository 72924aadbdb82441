/**
 * The one batch driver: whatever the stage kind, a run selects its work, states what it would
 * spend (and asks), claims the work in leased batches so that no two runs — on one machine or
 * many — process the same unit, runs it with a concurrency limit, and ends with a summary and an
 * exit code. A stage kind only says what its work is (`select`), what a batch costs (`plan`,
 * pure), how one unit is done (`work`) and what a result counts as (`classify`); it never sees
 * claims, slots, progress or signals.
 *
 * Work comes in two phases: the first (e.g. waiting for a jury) holds one of the `concurrency`
 * slots; the second (the commit) runs after the slot is handed on, so slow local writes never
 * keep a model call from starting — nor the claim that feeds the slots: a unit past its slot does
 * not count against the claim window (up to the store's commit depth). The lease is held across
 * both phases and renewed while they run. The second phase, and the next claim, wait for the next
 * turn of the event loop: the unit that took the slot sends its requests first.
 */
import pLimit from 'p-limit';
import { EXIT, isBusy, PipelineError } from '../errors.js';
import type { Engine } from '../engine.js';
import type { StageDef } from '../config/types.js';
import type { Lease, Query, Queue } from '../store/types.js';
import { hasPath } from '../util/json-path.js';
import { planLines, type BatchPlan } from './plan.js';
import { silentProgress, type Progress } from './progress.js';
import { addUsage, count, emptySummary, type Summary } from './summary.js';
import type { Usage } from '../jury/verdict.js';

export interface RunOptions {
  concurrency: number;
  limit?: number | undefined;
  dryRun: boolean;
  yes: boolean;
  useCache: boolean;
  source?: string | undefined;
  cwd: string;
  signal?: AbortSignal;
  /** Can we ask a person (a terminal)? */
  interactive: boolean;
  ask: (question: string) => Promise<boolean>;
  progress: (stage: string, total: number) => Progress;
  /** A message for the person, during the run. */
  note: (line: string) => void;
  /** Lease time of claims (ms); default the pipeline's claim_ttl. */
  claimTtlMs?: number;
  /** How long to keep retrying work another run holds, at the end (ms). */
  heldGraceMs?: number;
}

/** How a unit of work is counted in the summary. */
export interface Classified {
  /** The summary bucket (`approved`, `declined`, …). */
  outcome: string;
  /** Left as it was, for the next run (unjudged, untouched by an outage). */
  retry?: boolean;
  refused?: boolean;
  /** A line for the person. */
  note?: string;
  usage?: readonly Usage[];
  /** Why, listed under the outcome in the summary (a rejection's reason). */
  why?: string;
  /** What the stage's follow-up did with the unit (the promotion after a verdict): its stage and outcome. */
  then?: { stage: string; outcome: string };
}

/** What a stage kind selected: its units (explicit, or a store query) and what it counted up front. */
export interface Selection<T> {
  /** Explicit units with their claim keys (source records), or the proposals a query matches. */
  units: { items: readonly T[]; keyOf: (item: T) => string } | { query: NonNullable<Extract<Queue, { query: unknown }>['query']> };
  /** Outcome → count, decided without claiming (already handled, skipped). */
  counted?: Record<string, number>;
  /** How many units the run would take (for the progress bar and --limit). */
  total: number;
}

/** One unit's work: done in its slot, or — after the slot — a second phase that commits. */
export type Worked = Classified | undefined | { finish: () => Promise<Classified | undefined> };

/** What a stage kind provides to the driver. `T` is a unit of work: a proposal id or a source record. */
export interface StageRun<T> {
  /** Every outcome the summary lists, zeros included, in order. */
  outcomes(): string[];
  /** The word for a unit in plans ("proposal", "record"). */
  noun: string;
  /** The label of the retry list in the text summary. */
  retryLabel: string;
  select(options: RunOptions): Promise<Selection<T>>;
  /** Is there anything to state before the batch starts (paid calls, or a dry run)? */
  mustPlan(options: RunOptions): boolean;
  /** The batch plan over the selected units (reading them as needed); pure at its core. */
  plan(units: readonly T[], options: RunOptions): Promise<BatchPlan>;
  /** Do one leased unit; `undefined` counts it as nothing (decided by another run meanwhile). */
  work(unit: T, lease: Lease, options: RunOptions): Promise<Worked>;
  /** The line shown on the progress bar. */
  progressLabel?(summary: Summary): string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Is the proposal `id` still in the queue `query` selects: of its statuses, and without its marked field? */
async function stillQueued(engine: Engine, id: string, query: Query): Promise<boolean> {
  const read = await engine.store.read(id);
  if (read.kind !== 'found') return false;
  const status = read.stored.proposal['status'];
  const statuses = query.status === undefined ? undefined : ([] as string[]).concat(query.status);
  if (typeof status !== 'string' || (statuses !== undefined && !statuses.includes(status))) return false;
  return query.without === undefined || !hasPath(read.stored.proposal, query.without);
}

/** Resolves in the event loop's check phase: after the pending promise jobs and process.nextTick callbacks. */
const afterThisTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Ask before paid calls; refuse without a terminal and without --yes. Returns false to stop. */
async function confirmSpend(plan: BatchPlan, noun: string, options: RunOptions): Promise<boolean> {
  if (options.dryRun) {
    for (const line of planLines(plan, noun)) options.note(line);
    options.note('dry run: nothing was called and nothing was written');
    return false;
  }
  if (plan.paidCalls === 0 || options.yes) return true;
  for (const line of planLines(plan, noun)) options.note(line);
  if (!options.interactive) {
    throw new PipelineError(
      'run.unconfirmed',
      `${plan.stage}: this batch makes ${plan.paidCalls} paid model call${plan.paidCalls === 1 ? '' : 's'}; nothing was done`,
      {
        exitCode: EXIT.refused,
        hint: 'pass --yes to go ahead without a question (there is no terminal to ask on), or --dry-run to see the plan',
      },
    );
  }
  if (await options.ask(`spend ${plan.paidCalls} paid model call${plan.paidCalls === 1 ? '' : 's'}? [y/N] `)) return true;
  options.note('cancelled: nothing was called and nothing was written');
  return false;
}

function record(summary: Summary, key: string, classified: Classified | undefined, options: RunOptions): void {
  if (!classified) return;
  for (const usage of classified.usage ?? []) addUsage(summary, usage);
  if (classified.retry && options.signal?.aborted) return; // dropped by Ctrl-C: not a result
  count(summary, classified.outcome);
  if (classified.retry) summary.unjudged.push(key);
  if (classified.refused) summary.refused.push(key);
  if (classified.why !== undefined) (summary.listed[classified.outcome] ??= []).push(`${key}  ${classified.why}`);
  if (classified.then) {
    summary.then ??= { stage: classified.then.stage, counts: {} };
    summary.then.counts[classified.then.outcome] = (summary.then.counts[classified.then.outcome] ?? 0) + 1;
  }
  if (classified.note) options.note(classified.note);
}

/** Every unit of a query, in id order (for a plan). */
async function unitsOf<T>(engine: Engine, selection: Selection<T>, limit: number | undefined): Promise<T[]> {
  const out: T[] = [];
  if ('items' in selection.units) out.push(...selection.units.items);
  else for await (const entry of engine.store.index(selection.units.query)) if (entry.status !== null) out.push(entry.id as T);
  return limit === undefined ? out : out.slice(0, limit);
}

/** Run one stage's batch. */
export async function runBatch<T>(engine: Engine, stage: StageDef, kind: StageRun<T>, options: RunOptions): Promise<Summary> {
  const summary = emptySummary(stage.name, kind.outcomes(), kind.retryLabel);
  const selection = await kind.select(options);
  for (const [outcome, n] of Object.entries(selection.counted ?? {})) summary.counts[outcome] = (summary.counts[outcome] ?? 0) + n;
  if (kind.mustPlan(options) && !(await confirmSpend(await kind.plan(await unitsOf(engine, selection, options.limit), options), kind.noun, options)))
    return summary;
  await engine.store.recover({ sweep: true });

  const ttl = options.claimTtlMs ?? engine.pipeline.defaults.claimTtl * 1000;
  const total = options.limit === undefined ? selection.total : Math.min(selection.total, options.limit);
  const progress = total ? options.progress(stage.name, total) : silentProgress;
  const concurrency = Math.max(1, options.concurrency);
  const slots = pLimit(concurrency);
  // Commits are local writes, not model calls: as many run at once as the store puts to use, up to
  // 4 × concurrency — when the jury's own work keeps the event loop busy (offline judges on long
  // text), commits lag behind it, and the lag stays a few slots' worth, not a whole store's depth.
  const depth = Math.max(concurrency, Math.min(engine.store.commitDepth ?? concurrency, 4 * concurrency));
  const finishing = pLimit(depth);
  const active = new Map<string, Lease>();
  const seen = new Set<string>();
  const byKey = new Map<string, T>();
  let claimed = 0;
  const aborted = () => options.signal?.aborted === true;

  // Leases are renewed while work runs, three times per lease time (so a renewal that is late or
  // lost still lands before expiry, whatever the lease time); one the store says is lost is not
  // committed (fencing).
  const renewal = setInterval(
    () => {
      if (active.size) void engine.store.renew([...active.values()], ttl).catch(() => undefined);
    },
    Math.max(50, Math.floor(ttl / 3)),
  );
  renewal.unref();

  // Units past their slot (committing, releasing): they no longer need one, so they do not hold
  // back the next claim (see `pass`). `wake` is the waiting pass's.
  let pastSlot = 0;
  let wake: (() => void) | undefined;
  const wakePass = () => {
    const waiting = wake;
    wake = undefined;
    if (waiting) setImmediate(waiting);
  };

  const process = async (unit: T, lease: Lease) => {
    let finish: (() => Promise<Classified | undefined>) | undefined;
    let past = false;
    try {
      const worked = await slots(async () => (aborted() ? undefined : kind.work(unit, lease, options)));
      past = true;
      pastSlot++;
      wakePass();
      if (worked && 'finish' in worked) finish = worked.finish;
      else record(summary, lease.key, worked, options);
      if (finish) {
        // The slot just went to the next unit, whose model calls are being made in this same turn
        // of the event loop: the commit waits for the next turn, so the requests reach their
        // sockets (written on process.nextTick, which runs only once the promise jobs are done)
        // before a commit's synchronous writes, not after them.
        await afterThisTurn();
        record(summary, lease.key, await finishing(finish), options);
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Held by another live process past the wait (a command stopped mid-commit): not a refusal
      // of this unit, but work left for a retry, as one another run holds (SPEC §4, exit 2).
      const held = isBusy(error);
      record(
        summary,
        lease.key,
        held
          ? { outcome: 'held_by_another_run', retry: true, note: `${lease.key}: ${message} — left for a retry (run again once that process is done)` }
          : { outcome: 'refused', refused: true, note: `${lease.key}: ${message} — left as it was` },
        options,
      );
    } finally {
      active.delete(lease.key);
      await engine.store.release([lease]).catch(() => undefined);
      progress.tick(kind.progressLabel?.(summary) ?? '');
      if (past) pastSlot--;
    }
  };

  const limitReached = () => options.limit !== undefined && claimed >= options.limit;

  /** One pass over a queue: claim in batches as slots free up, never more than --limit in all. */
  const pass = async (queue: Queue) => {
    const running = new Set<Promise<void>>();
    let after: string | undefined;
    let index = 0;
    for (;;) {
      if (aborted() || limitReached()) break;
      // The window: 2 × concurrency units in a slot or waiting for one. Units past their slot do not
      // count, up to the store's commit depth of them — commits waiting for a busy event loop or a
      // sync must not leave slots idle (at C = 32 they did a fifth of the time), nor let a run claim
      // without bound (with 2 × concurrency more, four PostgreSQL workers with instant judges,
      // whose store commits on two connections, claimed more and did less).
      const window = Math.min(concurrency * 2 - (running.size - pastSlot), concurrency * 2 + depth - running.size);
      const left = options.limit === undefined ? Infinity : options.limit - claimed;
      const room = Math.min(window, left);
      // Claims go in batches: the next waits until half the window is free (the other half keeps
      // every slot busy meanwhile) — one claim per `concurrency` units, not one per unit finished.
      if (room <= 0 || (window < concurrency && room < left)) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      let current: Queue;
      if ('keys' in queue) {
        if (index >= queue.keys.length) break;
        const chunk = queue.keys.slice(index, index + room).filter((key) => !seen.has(key));
        index += room;
        if (chunk.length === 0) continue;
        current = { keys: chunk };
      } else {
        current = { query: { ...queue.query, ...(after !== undefined ? { after } : {}) } };
      }
      const got = await engine.store.claim(stage.name, current, room, ttl);
      for (const lease of got.leases) {
        if (seen.has(lease.key)) {
          await engine.store.release([lease]);
          continue;
        }
        seen.add(lease.key);
        claimed++;
        active.set(lease.key, lease);
        const unit = byKey.get(lease.key) ?? (lease.key as T);
        const task: Promise<void> = process(unit, lease).finally(() => {
          running.delete(task);
          wakePass();
        });
        running.add(task);
      }
      if (!('keys' in queue)) {
        if (got.next === undefined) break;
        after = got.next;
      }
    }
    await Promise.all(running);
  };

  const queue: Queue = 'items' in selection.units ? { keys: selection.units.items.map(selection.units.keyOf) } : { query: selection.units.query };
  if ('items' in selection.units) for (const item of selection.units.items) byKey.set(selection.units.keyOf(item), item);
  try {
    // Nothing selected: no claims to make (on a store of 100,000 proposals a pass over a query
    // costs a second listing of the store). Work that appears after the selection is the next run's.
    if (total > 0) await pass(queue);
    // A run that died while this one ran may have left a commit half-applied: finish it now.
    await engine.store.recover();
    // Work another run held is retried at the end (that run may have finished it, or died); what
    // is still held after a short grace is reported, never silently skipped (SPEC §4). Each round
    // after a pause asks `held` once, right before it claims and before it reports:
    // - what is held now is claimed by key: a dead holder's lapsed lease is taken over, a live
    //   one's claim is refused, and waited for;
    // - of a query's units, one that was held and no longer is was finished or given up by its
    //   holder: it is read, and retried only if it is still in the queue (given up). A finished
    //   one costs that read, not a claim, a read and a release: at the end of four PostgreSQL
    //   workers' runs, a few dozen of those, and three more sessions per worker;
    // - past the grace, what is still held is reported (exit 2).
    // An explicit list of keys retries every key not taken yet. An interrupted run, or one at its
    // --limit, asks nothing more.
    const deadline = Date.now() + (options.heldGraceMs ?? 2000);
    let delay = 20;
    const listed = new Set<string>(); // of a query's units, those `held` has listed
    for (let round = 0; ; round++) {
      if (aborted() || limitReached()) break;
      if (round > 0) {
        await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
        delay = Math.min(delay * 2, 50);
        if (aborted()) break;
      }
      const givenUp: string[] = [];
      let held: string[];
      if ('keys' in queue) held = queue.keys.filter((key) => !seen.has(key));
      else {
        held = (await engine.store.held(stage.name, queue)).filter((key) => !seen.has(key));
        const now = new Set(held);
        for (const key of [...listed]) {
          if (now.has(key)) continue;
          listed.delete(key);
          if (!seen.has(key) && (await stillQueued(engine, key, queue.query))) givenUp.push(key);
        }
        for (const key of held) listed.add(key);
      }
      if (held.length === 0 && givenUp.length === 0) break;
      if (Date.now() < deadline) {
        // (The first round only lists: its units were refused a moment ago, by the pass.)
        if (round > 0) await pass({ keys: [...givenUp, ...held] });
        continue;
      }
      for (const key of held) {
        count(summary, 'held_by_another_run');
        summary.unjudged.push(key);
        options.note(`${key}: another run still holds it — left for a retry (run again once that run is done)`);
      }
      if (givenUp.length > 0) await pass({ keys: givenUp });
      break;
    }
  } finally {
    clearInterval(renewal);
    progress.done();
  }
  summary.interrupted = aborted();
  summary.unjudged.sort();
  summary.refused.sort();
  return summary;
}
