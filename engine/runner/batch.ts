/**
 * Run work over many items with a concurrency limit (p-limit), claiming each one first so two
 * runs never process the same item, and stopping cleanly when interrupted: no new item is
 * claimed after the signal; items in flight finish (their commits) or are dropped unwritten.
 */
import pLimit from 'p-limit';
import type { Store } from '../store/types.js';

export interface BatchOptions<T> {
  store: Store;
  stage: string;
  items: readonly T[];
  keyOf: (item: T) => string;
  concurrency: number;
  signal?: AbortSignal;
  /** Process one claimed item. */
  work: (item: T) => Promise<void>;
  /** Called when another live run holds the claim. */
  onClaimed?: (item: T) => void;
  /** Called when `work` throws: the item is left as it was, the batch goes on. */
  onError: (item: T, error: unknown) => void;
}

export async function runBatch<T>(options: BatchOptions<T>): Promise<void> {
  const concurrency = Math.max(1, options.concurrency);
  const limit = pLimit(concurrency);
  const running = new Set<Promise<void>>();
  const process = async (item: T) => {
    if (options.signal?.aborted) return;
    const claim = await options.store.claim(options.stage, options.keyOf(item));
    if (!claim) {
      options.onClaimed?.(item);
      return;
    }
    try {
      await options.work(item);
    } catch (error) {
      options.onError(item, error);
    } finally {
      await claim.release();
    }
  };
  // Feed p-limit a bounded window, so memory stays flat however many items there are.
  for (const item of options.items) {
    if (options.signal?.aborted) break;
    const task: Promise<void> = limit(() => process(item)).finally(() => running.delete(task));
    running.add(task);
    if (running.size >= concurrency * 2) await Promise.race(running);
  }
  await Promise.all(running);
}
