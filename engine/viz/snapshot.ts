/**
 * Read what the page shows from the store: the count per state and, for each state, the first
 * proposals (id and title). Goes through the Store interface only, so any backend works.
 */
import type { StageDef } from '../config/types.js';
import type { Store } from '../store/types.js';
import { getPath } from '../util/json-path.js';
import type { ProposalRow, VizSnapshot } from './html.js';

/** Proposals listed per state: enough to browse, bounded so a large store keeps the page small. */
export const PROPOSALS_PER_STATE = 200;

export interface SnapshotRead {
  snapshot: VizSnapshot;
  /** Ids of proposal files that could not be read (reported by the caller, never fatal). */
  malformed: string[];
  /** Proposals whose status the lifecycle does not know, by status. */
  unknown: Record<string, number>;
}

/** The field shown as a proposal's title, by `list` and the page: the review stage's `title`. */
export function titleField(stages: readonly StageDef[]): string | undefined {
  for (const stage of stages) if (stage.kind === 'review' && stage.title) return stage.title;
  return undefined;
}

/** Read counts and the first `cap` proposals (sorted by id) of every state. */
export async function readSnapshot(store: Store, states: readonly string[], title: string | undefined, cap = PROPOSALS_PER_STATE): Promise<SnapshotRead> {
  const { counts, malformed, unknown } = await store.counts(states);
  const bad = new Set(malformed);
  const proposals: Record<string, ProposalRow[]> = {};
  for (const state of states) {
    const rows: ProposalRow[] = [];
    if ((counts[state] ?? 0) > 0) {
      for await (const listed of store.list({ status: state })) {
        if (listed.kind === 'malformed') {
          bad.add(listed.id);
          continue;
        }
        const value = title ? getPath(listed.stored.proposal, title) : undefined;
        rows.push({ id: listed.stored.id, title: typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : null });
        if (rows.length >= cap) break;
      }
    }
    proposals[state] = rows;
  }
  return { snapshot: { counts, proposals }, malformed: [...bad].sort(), unknown };
}
