/**
 * The pool's configuration (SPEC §5.8): the `pool:` section of pipeline.yaml, its defaults, and
 * the rules that tie it to the machine. Everything the pool knows of a proposal — which status is
 * "in use", which events count and archive, which fields hold the ranking inputs — comes from
 * here, so nothing in engine/pool names a field of the shipped pipeline. Pure.
 */
import type { Issue } from '../errors.js';
import type { MachineDef, PipelineDef } from '../config/types.js';
import { flattenTransitions } from '../lifecycle/machine.js';
import { RESERVED_COLLECTIONS } from '../store/journal.js';
import { didYouMean, listWords } from '../util/suggest.js';

/** The `pool:` section as written. */
export type PoolDef = NonNullable<PipelineDef['pool']>;

export interface HitWeights {
  untested: number;
  base: number;
  floor: number;
}

export interface RankingConfig {
  halfLifeDays: number;
  k: number;
  maxK: number;
  /** hit_rate is null under this many outcomes. */
  minOutcomes: number;
  hitWeight: HitWeights;
}

export interface PruneConfig {
  minOutcomes: number;
  maxHitRate: number;
  maxArchive: number;
  receipts: string;
}

/** The pool with every default filled in. */
export interface PoolConfig {
  state: string;
  /** Where `archive` takes a proposal (the target of the archive event). */
  archivedState: string;
  events: PoolDef['events'];
  fields: PoolDef['fields'];
  /** Extra keys of a `pool top --json` row, in declaration order. */
  show: [key: string, path: string][];
  ranking: RankingConfig;
  prune: PruneConfig;
}

/** The keys every `pool top --json` row has before the declared `show` keys (SPEC §5.8). */
export const TOP_KEYS = ['id', 'score', 'match', 'recency', 'hit_weight', 'hit_count', 'hit_rate', 'miss_count'] as const;

/** Fill in the defaults (the shipped numbers of SPEC §5.8). `machine` names the archive state. */
export function resolvePool(def: PoolDef, machine: MachineDef): PoolConfig {
  const archive = flattenTransitions(machine).find((t) => t.from === def.state && t.event === def.events.archive && t.target !== undefined);
  const ranking = def.ranking ?? {};
  const prune = def.prune ?? {};
  return {
    state: def.state,
    archivedState: archive?.target ?? def.state,
    events: def.events,
    fields: def.fields,
    show: Object.entries(def.show ?? {}),
    ranking: {
      halfLifeDays: ranking.half_life_days ?? 180,
      k: ranking.k ?? 3,
      maxK: ranking.max_k ?? 50,
      minOutcomes: ranking.min_outcomes ?? 3,
      hitWeight: { untested: ranking.hit_weight?.untested ?? 1, base: ranking.hit_weight?.base ?? 0.5, floor: ranking.hit_weight?.floor ?? 0.1 },
    },
    prune: {
      minOutcomes: prune.min_outcomes ?? 5,
      maxHitRate: prune.max_hit_rate ?? 0.3,
      maxArchive: prune.max_archive ?? 3,
      receipts: prune.receipts ?? 'prune-receipts',
    },
  };
}

/**
 * The cross-file rules of the `pool:` section (positioned in pipeline.yaml): its state exists;
 * outcome and undo stay in it; archive leaves it for another state that restore comes back from;
 * K fits under its cap; `show` keys do not shadow the fixed ones; receipts are not a reserved name.
 * `issueAt` places an issue at a path of pipeline.yaml.
 */
export function checkPool(
  def: PoolDef,
  machine: MachineDef,
  issueAt: (path: string[], code: string, message: string, hint?: string) => Issue,
  /** The collections of entries the pipeline writes or moves (receipts are not kept among entries). */
  collections: readonly string[] = [],
): Issue[] {
  const issues: Issue[] = [];
  const at = (path: string[], code: string, message: string, hint?: string) => issues.push(issueAt(['pool', ...path], code, message, hint));
  const states = Object.keys(machine.states);
  if (!states.includes(def.state)) {
    at(['state'], 'config.unknown_state', `unknown state "${def.state}"`, didYouMean(def.state, states) ?? `states: ${states.join(', ')}`);
    return issues;
  }
  const transitions = flattenTransitions(machine);
  const from = (state: string, event: string) => transitions.filter((t) => t.from === state && t.event === event && !t.idempotent);
  const accepted = (state: string) => [...new Set(transitions.filter((t) => t.from === state).map((t) => t.event))];
  const noEvent = (key: keyof PoolDef['events'], state: string, what: string) => {
    const event = def.events[key];
    const hint = didYouMean(event, accepted(state)) ?? `its events: ${listWords(accepted(state), 'and') || 'none'}`;
    at(['events', key], 'config.unknown_event', `state "${state}" has no "${event}" transition ${what}`, hint);
  };
  for (const key of ['outcome', 'undo'] as const) {
    const found = from(def.state, def.events[key]);
    if (!found.length || found.some((t) => t.target !== undefined && t.target !== def.state)) noEvent(key, def.state, `that stays in "${def.state}"`);
  }
  const archive = from(def.state, def.events.archive);
  const archived = archive[0]?.target;
  if (archived === undefined || archived === def.state || archive.some((t) => t.target !== archived)) {
    noEvent('archive', def.state, 'to another state');
  } else if (!from(archived, def.events.restore).some((t) => t.target === def.state)) {
    noEvent('restore', archived, `back to "${def.state}"`);
  }
  const k = def.ranking?.k ?? 3;
  const maxK = def.ranking?.max_k ?? 50;
  if (k > maxK) at(['ranking', 'k'], 'config.pool_k', `k is ${k}, more than max_k (${maxK})`, 'raise max_k or lower k');
  for (const key of Object.keys(def.show ?? {})) {
    if (!(TOP_KEYS as readonly string[]).includes(key)) continue;
    at(['show', key], 'config.pool_show', `"${key}" is a key every pool top row has already`, `choose another name; taken: ${TOP_KEYS.join(', ')}`);
  }
  const receipts = def.prune?.receipts;
  if (receipts !== undefined && RESERVED_COLLECTIONS.includes(receipts)) {
    at(['prune', 'receipts'], 'config.collection', `"${receipts}" is reserved by the store`);
  } else if (receipts !== undefined && collections.includes(receipts)) {
    at(
      ['prune', 'receipts'],
      'config.collection',
      `"${receipts}" holds the pool's entries: a receipt there would be read as one`,
      'keep receipts in a directory of their own, e.g. prune-receipts',
    );
  }
  return issues;
}
