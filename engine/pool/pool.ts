/**
 * The pool in use (SPEC §5.8), over the engine and its store: outcomes, archive and restore are
 * machine events committed like any other (with a retry when another writer got there first);
 * `top` and `prune` rank from the derived index and re-read what they print, so what is shown is
 * never stale. The arithmetic is in ranking.ts; this module does the reading and the writing.
 */
import type { Pipeline } from '../config/load.js';
import type { ApplyOptions, Engine } from '../engine.js';
import type { Refusal } from '../lifecycle/decide.js';
import type { Proposal } from '../lifecycle/effects.js';
import { refused, type Outcome } from '../outcome.js';
import type { Stored } from '../store/types.js';
import { resolvePool, type PoolConfig } from './config.js';
import { PoolIndex } from './pool-index.js';
import { pruneCandidates, type Filters, type PoolRow, type PruneCandidate, type Scored } from './ranking.js';
import { rowOf } from './rows.js';

/** The words `pool outcome` takes: a hit or a miss of the proposal in use. */
export const RESULTS = ['hit', 'miss'] as const;
export type Result = (typeof RESULTS)[number];

/** The audit rows' stage for pool commands (the pool is not a stage of the pipeline). */
export const POOL_STAGE = 'pool';

/** The pipeline's pool, with its defaults; undefined when pipeline.yaml declares none. */
export function poolOf(pipeline: Pipeline): PoolConfig | undefined {
  return pipeline.def.pool ? resolvePool(pipeline.def.pool, pipeline.lifecycle.def) : undefined;
}

export interface LandOptions {
  before?: ApplyOptions['before'];
  /** How many commits to try before giving up (another writer keeps winning). */
  attempts?: number;
  /** Injected for tests; default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Commit an event on a proposal, deciding again on the proposal as it is now each time another
 * writer committed first — with a random wait, so racing writers spread out — until it lands, is
 * refused (naming the status it has then), or `attempts` commits lost their race.
 */
export async function landEvent(engine: Engine, stored: Stored, event: string, args: Record<string, unknown>, options: LandOptions = {}): Promise<Outcome> {
  const attempts = options.attempts ?? 50;
  const sleep = options.sleep ?? sleepFor;
  const random = options.random ?? Math.random;
  let current = stored;
  for (let attempt = 1; ; attempt++) {
    // (This loop decides again after each lost race: the engine's single re-decision is not asked for.)
    const apply: ApplyOptions = { stage: POOL_STAGE, actor: 'cli', ...(options.before ? { before: options.before } : {}) };
    const outcome = await engine.applyTo(current, event, args, apply);
    if (outcome.kind !== 'refused' || outcome.code !== 'changed') return outcome;
    const status = String(current.proposal['status']);
    if (attempt >= attempts) {
      const message = `${current.id} (${status}): other writers kept changing it; ${event} lost ${attempts} races and was not recorded — retry`;
      return refused('changed', message, undefined, current.id);
    }
    // Full jitter, growing to a cap: the writers that collided now wait for different times.
    await sleep(random() * Math.min(250, 4 * 2 ** attempt));
    const again = await engine.read(current.id);
    if (!again.ok) return again.outcome;
    current = again.stored;
  }
}

export interface OutcomeOptions {
  undo?: boolean;
  consumer?: string;
  session?: string;
  land?: LandOptions;
}

/** `pool outcome ID hit|miss`: count (or with `undo`, take back) one outcome. The id is checked before the store is touched. */
export async function recordOutcome(engine: Engine, pool: PoolConfig, id: string, result: string, options: OutcomeOptions = {}): Promise<Outcome> {
  const read = await engine.read(id);
  if (!read.ok) return read.outcome;
  const status = String(read.stored.proposal['status']);
  if (!(RESULTS as readonly string[]).includes(result)) {
    return refused('invalid_args', `${id} (${status}): unknown result ${JSON.stringify(result)} (expected hit or miss)`, undefined, id);
  }
  const args: Record<string, unknown> = { result };
  if (options.consumer !== undefined) args['consumer'] = options.consumer;
  if (options.session !== undefined) args['session'] = options.session;
  return landEvent(engine, read.stored, options.undo ? pool.events.undo : pool.events.outcome, args, options.land);
}

/** `pool archive ID` / `pool restore ID`: move the proposal (and its entry) out of use, or back. */
export async function moveProposal(engine: Engine, pool: PoolConfig, id: string, direction: 'archive' | 'restore', land?: LandOptions): Promise<Outcome> {
  const read = await engine.read(id);
  if (!read.ok) return read.outcome;
  return landEvent(engine, read.stored, pool.events[direction], {}, land);
}

/** One row of `pool top`: the score and its parts, and the proposal as it is now. */
export interface TopRow {
  scored: Scored;
  proposal: Proposal;
}

export interface TopResult {
  rows: TopRow[];
  malformed: string[];
  rebuilt: boolean;
}

/**
 * The `k` best proposals in use for `filters` at `now` (ms). Ranked from the index; the rows it
 * would print are re-read, and any that changed is ranked again from what it is now, until the
 * K printed are all as read (each round reads only rows not read yet, so it ends).
 */
export async function top(engine: Engine, pool: PoolConfig, filters: Filters, k: number, now: number, options: { rebuild?: boolean } = {}): Promise<TopResult> {
  const opened = await PoolIndex.open(engine.store, pool, options);
  const malformed = opened.malformed;
  let { index, rebuilt } = opened;
  const fresh = new Map<string, Proposal>();
  // Each round reads at least one row not read before and corrects the index from it, so the
  // rounds end. Many stale rows (proposals edited by hand, with no audit row) take many rounds:
  // past a bound the index is rebuilt from a listing once, and ranked from it; the bound after
  // that only turns a bug into an error instead of a hang.
  for (let round = 0, bound = 10 * k + 100; ; round++) {
    if (round > bound) {
      if (rebuilt) throw new Error('pool top: the ranking did not settle (a bug)');
      const again = await PoolIndex.open(engine.store, pool, { rebuild: true });
      ({ index, rebuilt } = again);
      for (const id of again.malformed) if (!malformed.includes(id)) malformed.push(id);
      fresh.clear();
      bound = round + 10 * k + 100;
    }
    const best = index.rank(filters, now, pool.ranking, k);
    const unread = best.filter((scored) => !fresh.has(scored.row.id));
    if (unread.length === 0) {
      await index.save();
      return { rows: best.map((scored) => ({ scored, proposal: fresh.get(scored.row.id)! })), malformed, rebuilt };
    }
    for (const { row } of unread) {
      const current = await readRow(engine, pool, row.id, malformed);
      index.put(row.id, current?.row);
      if (current) fresh.set(row.id, current.proposal);
    }
  }
}

async function readRow(engine: Engine, pool: PoolConfig, id: string, malformed: string[]): Promise<{ row: PoolRow; proposal: Proposal } | undefined> {
  const read = await engine.store.read(id);
  if (read.kind === 'malformed') malformed.push(id);
  if (read.kind !== 'found') return undefined;
  const row = rowOf(id, read.stored.proposal, pool);
  return row ? { row, proposal: read.stored.proposal } : undefined;
}

export interface PrunePlan {
  /** Best candidates first, each as read now. */
  candidates: PruneCandidate[];
  /** The candidates' proposals as read. */
  proposals: Map<string, Proposal>;
  malformed: string[];
}

/** The prune candidates (SPEC §5.8), from the index, each re-read so its numbers are current. */
export async function planPrune(engine: Engine, pool: PoolConfig, options: { rebuild?: boolean } = {}): Promise<{ plan: PrunePlan; index: PoolIndex }> {
  const { index, malformed } = await PoolIndex.open(engine.store, pool, options);
  const listed = pruneCandidates(
    index.rows((hits, misses) => hits + misses >= pool.prune.minOutcomes),
    pool.prune,
    pool.ranking.minOutcomes,
  );
  const current: PoolRow[] = [];
  const proposals = new Map<string, Proposal>();
  for (const { row } of listed) {
    const now = await readRow(engine, pool, row.id, malformed);
    index.put(row.id, now?.row);
    if (now) {
      current.push(now.row);
      proposals.set(row.id, now.proposal);
    }
  }
  return { plan: { candidates: pruneCandidates(current, pool.prune, pool.ranking.minOutcomes), proposals, malformed }, index };
}

export interface PruneRun {
  candidates: PruneCandidate[];
  proposals: Map<string, Proposal>;
  /** Archived (or, planning only, to be archived), in candidate order. */
  archived: string[];
  /** Candidates that could not be archived (they changed meanwhile), with why. */
  refused: { id: string; message: string }[];
  /** The receipt's name in its collection, when one was written. */
  receipt?: string;
  malformed: string[];
}

/**
 * `pool prune --execute`: archive the first `maxArchive` candidates — each still a candidate
 * when it is committed — and write a receipt of what was done. With `planOnly`, nothing is written.
 */
export async function executePrune(
  engine: Engine,
  pool: PoolConfig,
  maxArchive: number,
  options: { planOnly?: boolean; land?: LandOptions } = {},
): Promise<PruneRun> {
  const { plan, index } = await planPrune(engine, pool);
  const chosen = plan.candidates.slice(0, maxArchive);
  const base = { candidates: plan.candidates, proposals: plan.proposals, refused: [] as PruneRun['refused'], malformed: plan.malformed };
  if (options.planOnly) return { ...base, archived: chosen.map(({ row }) => row.id) };
  const stillCandidate = (stored: Stored): Refusal | undefined => {
    const row = rowOf(stored.id, stored.proposal, pool);
    if (row && pruneCandidates([row], pool.prune, pool.ranking.minOutcomes).length === 1) return undefined;
    return { kind: 'refused', code: 'not_candidate', message: `${stored.id} (${String(stored.proposal['status'])}): no longer a prune candidate; left in use` };
  };
  // The receipt's place first: archives whose receipt could not be written would be a prune no
  // record tells of (and the command would fail having done it).
  await engine.store.prepareDocuments(pool.prune.receipts);
  const archived: string[] = [];
  for (const { row } of chosen) {
    const read = await engine.read(row.id);
    const land: LandOptions = { ...options.land, before: stillCandidate };
    const outcome = read.ok ? await landEvent(engine, read.stored, pool.events.archive, { reason: 'prune' }, land) : read.outcome;
    if (outcome.kind === 'committed') archived.push(row.id);
    else if (outcome.kind === 'refused') base.refused.push({ id: row.id, message: outcome.message });
  }
  await index.save();
  const at = engine.now();
  const receipt = {
    at,
    min_outcomes: pool.prune.minOutcomes,
    max_hit_rate: pool.prune.maxHitRate,
    max_archive: maxArchive,
    candidates: plan.candidates.map(({ row }) => row.id),
    archived,
  };
  // One receipt per executed prune: two in the same second get distinct names.
  for (let n = 1; n <= 100; n++) {
    const name = n === 1 ? `${at}.json` : `${at}-${n}.json`;
    if ((await engine.store.writeDocument(pool.prune.receipts, name, receipt)) === 'written') return { ...base, archived, receipt: name };
  }
  throw new Error(`could not name a prune receipt for ${at}: 100 already exist`);
}
