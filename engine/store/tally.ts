/**
 * How many proposals a query matches, by status, and how many of each carry a mark: what a run's
 * selection counts before it claims. A store that counts where it keeps them (PostgreSQL: one
 * `GROUP BY` statement) is asked to; any other is listed with `index`, the same
 * listing a claim pass of that query makes first (the file store keeps it for that pass).
 */
import type { Query, StatusTally, Store } from './types.js';

export async function tallyOf(store: Store, query: Query, mark?: string): Promise<StatusTally[]> {
  if (store.tally) return store.tally(query, mark);
  const tallies = new Map<string, StatusTally>();
  for await (const entry of store.index(query)) {
    if (entry.status === null) continue;
    let tally = tallies.get(entry.status);
    if (!tally) tallies.set(entry.status, (tally = { status: entry.status, count: 0, marked: 0 }));
    tally.count++;
    if (mark !== undefined && entry.marks.includes(mark)) tally.marked++;
  }
  return [...tallies.values()];
}
