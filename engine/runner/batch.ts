/**
 * Run work over many items with a concurrency limit (p-limit), claiming each one first so two
 * runs never process the same item, and stopping cleanly when interrupted: no new item is
 * claimed after the signal; items in flight finish (their commits) or are dropped unwritten.
 *
 * Work comes in two phases. The first (e.g. waiting for a jury) holds one of the `concurrency`
 * slots; the second (committing, promoting) runs after the slot is handed to the next item, so
 * slow local writes never keep a model call from starting. The claim is held across both.
 */
import pLimit from 'p-limit';
import type { Store } from '../store/types.js';

/** What the first phase may leave for after its slot is released. */
export type Finish = (() => Promise<void>) | void;

export interface BatchOptions<T> {
  store: Store;
  stage: string;
  items: readonly T[];
  keyOf: (item: T) => string;
  concurrency: number;
  signal?: AbortSignal;
  /** Process one claimed item; may return a second phase to run outside the slot. */
  work: (item: T) => Promise<Finish>;
  /**
   * Called for each item another live run still held at the end of the batch, after it was
   * retried (the caller reports it as left for a retry).
   */
  onHeld?: (item: T) => void;
  /** How long to keep retrying held items at the end of the batch (ms). */
  heldGraceMs?: number;
  /** Called when `work` throws: the item is left as it was, the batch goes on. */
  onError: (item: T, error: unknown) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runBatch<T>(options: BatchOptions<T>): Promise<void> {
  const concurrency = Math.max(1, options.concurrency);
  const slots = pLimit(concurrency);
  const finishing = pLimit(concurrency);
  const running = new Set<Promise<void>>();
  let held: T[] = [];
  const process = async (item: T) => {
    const claimed = await slots(async () => {
      if (options.signal?.aborted) return undefined;
      const claim = await options.store.claim(options.stage, options.keyOf(item));
      if (!claim) {
        held.push(item);
        return undefined;
      }
      try {
        return { claim, finish: await options.work(item) };
      } catch (error) {
        await claim.release();
        options.onError(item, error);
        return undefined;
      }
    });
    if (!claimed) return;
    try {
      if (claimed.finish) await finishing(claimed.finish);
    } catch (error) {
      options.onError(item, error);
    } finally {
      await claimed.claim.release();
    }
  };
  const feed = async (items: Iterable<T>) => {
    // Feed p-limit a bounded window, so memory stays flat however many items there are.
    for (const item of items) {
      if (options.signal?.aborted) break;
      const task: Promise<void> = process(item).finally(() => running.delete(task));
      running.add(task);
      if (running.size >= concurrency * 2) await Promise.race(running);
    }
    await Promise.all(running);
  };
  await feed(options.items);
  // Items another run held are retried at the end (it may have finished them meanwhile, or died);
  // what is still held after a short grace is reported, never silently skipped.
  const deadline = Date.now() + (options.heldGraceMs ?? 2000);
  let delay = 20;
  while (held.length && !options.signal?.aborted) {
    const retry = held;
    held = [];
    await feed(retry);
    if (!held.length || Date.now() >= deadline) break;
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(delay * 2, 250);
  }
  if (!options.signal?.aborted) for (const item of held) options.onHeld?.(item);
}
