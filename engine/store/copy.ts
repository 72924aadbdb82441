/**
 * `pipeline store copy`: a whole store from one backend to another (file ↔ PostgreSQL, or the
 * same kind elsewhere) — proposals, the audit log, the ledgers, pool entries and documents, not
 * the answer cache. The destination must be empty. What was read is counted, what landed is
 * counted again from the destination, and the two must agree.
 */
import type { Dumped, Store } from './types.js';

export interface CopyCounts {
  proposals: number;
  audit: number;
  ledgers: Record<string, number>;
  entries: Record<string, number>;
  documents: Record<string, number>;
}

function emptyCounts(): CopyCounts {
  return { proposals: 0, audit: 0, ledgers: {}, entries: {}, documents: {} };
}

function tally(counts: CopyCounts, item: Dumped): void {
  const bump = (map: Record<string, number>, name: string) => (map[name] = (map[name] ?? 0) + 1);
  if (item.kind === 'proposal') counts.proposals++;
  else if (item.kind === 'audit') counts.audit++;
  else if (item.kind === 'ledger') bump(counts.ledgers, item.ledger);
  else if (item.kind === 'entry') bump(counts.entries, item.collection);
  else bump(counts.documents, item.collection);
}

/** Count what a store holds (the same items a dump yields). */
export async function countStore(store: Store): Promise<CopyCounts> {
  const counts = emptyCounts();
  for await (const item of store.dump()) tally(counts, item);
  return counts;
}

/** Copy `from` into the empty `to`; returns what was copied, checked against what `to` now holds. */
export async function copyStore(from: Store, to: Store): Promise<{ copied: CopyCounts; found: CopyCounts; same: boolean }> {
  const copied = emptyCounts();
  async function* counted(): AsyncIterable<Dumped> {
    for await (const item of from.dump()) {
      tally(copied, item);
      yield item;
    }
  }
  await to.load(counted());
  const found = await countStore(to);
  return { copied, found, same: JSON.stringify(normalize(copied)) === JSON.stringify(normalize(found)) };
}

function normalize(counts: CopyCounts): CopyCounts {
  const sorted = (map: Record<string, number>) => Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : 1)));
  return {
    proposals: counts.proposals,
    audit: counts.audit,
    ledgers: sorted(counts.ledgers),
    entries: sorted(counts.entries),
    documents: sorted(counts.documents),
  };
}

/** `1,234 proposals, 5,678 audit rows, declined 12, …` */
export function describeCounts(counts: CopyCounts): string[] {
  const lines = [`${counts.proposals} proposals`, `${counts.audit} audit rows`];
  for (const [name, n] of Object.entries(counts.ledgers)) lines.push(`${n} ${name} ledger rows`);
  for (const [name, n] of Object.entries(counts.entries)) lines.push(`${n} ${name} entries`);
  for (const [name, n] of Object.entries(counts.documents)) lines.push(`${n} ${name} documents`);
  return lines;
}
