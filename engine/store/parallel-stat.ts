/**
 * One `lstat` per proposal file is most of what `status` costs on a large store (~4 µs each,
 * 0.4 s at 100,000 here). From 40,000 files on (below that a thread's start-up eats the gain), a
 * worker thread stats from the end of the list while the caller goes from its start, and hands
 * its results over in shared memory: the two run on two cores. The list is cut into chunks, and
 * each chunk is claimed (an atomic compare-and-swap) by whichever side reaches it first, so the
 * two meet wherever their speeds take them — the caller does more than stat each entry, and the
 * worker starts later. Anything that goes wrong with the worker (it cannot start, it fails, it is
 * too slow) only means the caller stats the rest itself.
 */
import { lstatSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';

/** What the signature of a file is made of; `undefined`: gone; `null`: not a regular file. */
export type FileStat = { mtimeMs: number; size: number; ino: number; ctimeMs: number } | null | undefined;

let parallelFrom = 40_000;
/** How long the caller waits for the worker before it stats what is left itself. */
const WAIT_MS = 30_000;
/** Entries per chunk: what one side claims at a time. */
let chunkSize = 512;

/** A chunk's state in the shared array: nobody's yet, the worker's (being stat'ed), the worker's and done, the caller's. */
const FREE = 0;
const WORKER_BUSY = 1;
const WORKER_DONE = 2;
const CALLER = 3;

/** What the worker writes as a file's size when it is gone, or not a regular file. */
const GONE = -1;
const NOT_A_FILE = -2;

/** For tests: how many results came from a worker. */
export const statsFromWorker = { count: 0 };

/** For tests: the caller lets the worker go first, until it is gone ('exit') or has claimed a chunk ('claim'). */
let callerWaits: 'exit' | 'claim' | undefined;

/**
 * For tests: the number of files from which a worker helps, the script it runs, the chunk size,
 * and whether the caller waits for the worker before it claims anything (so that what the test
 * looks at does not depend on how fast a thread starts).
 */
export function setParallelStatFrom(files: number, options: { script?: string; chunk?: number; callerWaits?: 'exit' | 'claim' } = {}): void {
  parallelFrom = files;
  workerScript = options.script ?? WORKER;
  chunkSize = options.chunk ?? 512;
  callerWaits = options.callerWaits;
}

/** Node 20 has it (V8 8.7 on); TypeScript declares it from es2024 on. */
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string } })
  .waitAsync;

// CommonJS run by the worker (eval): no module of ours to resolve from wherever the bundle is.
const WORKER = `
const { workerData } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
const { prefix, names, count, chunk, suffix, shared } = workerData;
const ids = Buffer.from(names);
const chunks = Math.ceil(count / chunk);
const state = new Int32Array(shared, 0, chunks);
const out = new Float64Array(shared, Math.ceil(chunks / 2) * 8);
for (let k = chunks - 1; k >= 0; k--) {
  if (Atomics.compareExchange(state, k, ${FREE}, ${WORKER_BUSY}) !== ${FREE}) break;
  const first = k * chunk;
  const text = ids.toString('latin1', first * 26, Math.min(count, (k + 1) * chunk) * 26);
  for (let i = first; i < Math.min(count, (k + 1) * chunk); i++) {
    const stat = lstatSync(prefix + text.slice((i - first) * 26, (i - first) * 26 + 26) + suffix, { throwIfNoEntry: false });
    const at = i * 4;
    if (stat && stat.isFile()) { out[at] = stat.mtimeMs; out[at + 1] = stat.size; out[at + 2] = stat.ino; out[at + 3] = stat.ctimeMs; }
    else out[at + 1] = stat ? ${NOT_A_FILE} : ${GONE};
  }
  Atomics.store(state, k, ${WORKER_DONE});
  Atomics.notify(state, k);
}
`;

let workerScript = WORKER;

function statOne(file: string): FileStat {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (!stat) return undefined;
  return stat.isFile() ? { mtimeMs: stat.mtimeMs, size: stat.size, ino: stat.ino, ctimeMs: stat.ctimeMs } : null;
}

/**
 * Ids of 26 characters each (ULIDs), packed into bytes outside the JavaScript heap: 100,000 of
 * them are 2.6 MB that no collection copies, not 100,000 strings (a scan's young generation grew
 * to its limit keeping them). Read in order, they are decoded a block of 512 at a time.
 */
export class PackedIds {
  private block = -1;
  private text = '';
  constructor(
    private readonly bytes: Buffer,
    readonly length: number,
  ) {}
  /** Ids added one after another, up to `capacity` of them. */
  static writer(capacity: number, options: { grow?: boolean } = {}): { push(id: string): void; done(): PackedIds; sorted(): PackedIds } {
    // Shared: a worker that stats them reads these bytes, not a copy.
    let bytes = Buffer.from(new SharedArrayBuffer(capacity * 26));
    let count = 0;
    let pending = '';
    const flush = () => {
      bytes.write(pending, (count - pending.length / 26) * 26, 'latin1');
      pending = '';
    };
    return {
      push(id) {
        if (count === capacity) {
          if (!options.grow) throw new RangeError('more ids than room for them');
          capacity = Math.max(1024, capacity * 2);
          const grown = Buffer.from(new SharedArrayBuffer(capacity * 26));
          bytes.copy(grown, 0, 0, count * 26 - pending.length); // what is written; the rest waits
          bytes = grown;
        }
        pending += id;
        count++;
        if (pending.length >= 512 * 26) flush();
      },
      done: () => {
        flush();
        return new PackedIds(bytes, count);
      },
      sorted: () => {
        flush();
        return PackedIds.sortedInPlace(bytes, count);
      },
    };
  }
  /**
   * The first `count` ids of 26 bytes each in `bytes`, sorted there (as strings sort: they are
   * ASCII): a radix sort of their positions, a character at a time from the last, then each id
   * moved to its place along the cycles of that order — no second copy of the ids.
   */
  static sortedInPlace(bytes: Buffer, count: number): PackedIds {
    let order = new Uint32Array(count);
    let next = new Uint32Array(count);
    for (let i = 0; i < count; i++) order[i] = i;
    const counts = new Uint32Array(256);
    for (let position = 25; position >= 0; position--) {
      counts.fill(0);
      for (let i = 0; i < count; i++) counts[bytes[i * 26 + position]!]!++;
      // A character every id shares (most of a ULID's time) orders nothing.
      if (count === 0 || counts[bytes[position]!] === count) continue;
      for (let c = 0, total = 0; c < 256; c++) {
        const here = counts[c]!;
        counts[c] = total;
        total += here;
      }
      for (let i = 0; i < count; i++) {
        const id = order[i]!;
        next[counts[bytes[id * 26 + position]!]!++] = id;
      }
      [order, next] = [next, order];
    }
    // Place k takes the id at order[k]: follow each cycle once, marking a place done by order[k] = k.
    const held = new Uint8Array(26);
    for (let start = 0; start < count; start++) {
      if (order[start] === start) continue;
      for (let b = 0; b < 26; b++) held[b] = bytes[start * 26 + b]!;
      let place = start;
      for (let from = order[place]!; from !== start; place = from, from = order[place]!) {
        for (let b = 0; b < 26; b++) bytes[place * 26 + b] = bytes[from * 26 + b]!;
        order[place] = place;
      }
      for (let b = 0; b < 26; b++) bytes[place * 26 + b] = held[b]!;
      order[place] = place;
    }
    return new PackedIds(bytes, count);
  }
  at(i: number): string {
    const block = i >>> 9;
    if (block !== this.block) {
      this.block = block;
      this.text = this.bytes.toString('latin1', block * 512 * 26, Math.min(this.length, (block + 1) * 512) * 26);
    }
    const at = (i & 511) * 26;
    return this.text.slice(at, at + 26);
  }
  /** The bytes, shared with any thread given them. */
  get shared(): ArrayBufferLike {
    return this.bytes.buffer;
  }
}

/**
 * The stats of a list of files, read in order: `await` what `claim(i)` returns (when it returns
 * anything) before `at(i)` for each i, and `close()` at the end (a scan that stops early stops
 * the worker with it). `claim` costs nothing but at the start of a chunk.
 */
export interface FileStats {
  claim(i: number): Promise<void> | undefined;
  at(i: number): FileStat;
  close(): void;
}

/**
 * The stats of `prefix + ids[i] + suffix`. Ids are 26 characters (ULIDs), in an array or packed. From `parallelFrom` ids
 * on, a worker that starts now stats chunks from the end; a chunk it is still working on when the
 * caller reaches it is waited for (its end, the worker's exit or error, or WAIT_MS) without
 * blocking the event loop, and whatever the worker did not finish is stat'ed here.
 */
export function statFiles(prefix: string, ids: readonly string[] | PackedIds, suffix: string): FileStats {
  const packed = ids instanceof PackedIds ? ids : undefined;
  const list = packed ? undefined : (ids as readonly string[]);
  const sync = packed ? (i: number) => statOne(`${prefix}${packed.at(i)}${suffix}`) : (i: number) => statOne(`${prefix}${list![i]}${suffix}`);
  const alone: FileStats = { claim: () => undefined, at: sync, close: () => {} };
  if (ids.length < parallelFrom || list?.some((id) => id.length !== 26)) return alone;
  let names: ArrayBufferLike;
  if (packed) names = packed.shared;
  else {
    const writer = PackedIds.writer(list!.length);
    for (const id of list!) writer.push(id);
    names = writer.done().shared;
  }
  const chunk = chunkSize;
  const chunks = Math.ceil(ids.length / chunk);
  let shared: SharedArrayBuffer;
  let worker: Worker;
  try {
    // The chunks' states (Int32, padded to a whole Float64), then four numbers per file.
    shared = new SharedArrayBuffer(Math.ceil(chunks / 2) * 8 + ids.length * 4 * 8);
    // Loaded here: only a listing of tens of thousands of files starts a thread.
    const { Worker } = process.getBuiltinModule('node:worker_threads');
    // Each lstat is garbage at once: a young generation of 2 MB does (its default grows to 32 MB).
    worker = new Worker(workerScript, {
      eval: true,
      workerData: { prefix, names, count: ids.length, chunk, suffix, shared },
      resourceLimits: { maxYoungGenerationSizeMb: 2 },
    });
  } catch {
    return alone;
  }
  const state = new Int32Array(shared, 0, chunks);
  const out = new Float64Array(shared, Math.ceil(chunks / 2) * 8);
  // Settled when the worker is gone (or given up on).
  let timer: NodeJS.Timeout | undefined;
  let gone = false;
  const exited = new Promise<void>((resolve) => {
    const end = () => {
      clearTimeout(timer);
      gone = true;
      resolve();
    };
    timer = setTimeout(() => {
      void worker.terminate();
      end();
    }, WAIT_MS);
    worker.once('exit', end);
    worker.once('error', end);
  });
  /** Per chunk: does the caller read the worker's results (true) or stat the files itself? */
  const fromWorker = new Uint8Array(chunks);
  const decide = (k: number): boolean => {
    if (Atomics.compareExchange(state, k, FREE, CALLER) === FREE) return false;
    const now = Atomics.load(state, k);
    if (now === WORKER_DONE) fromWorker[k] = 1;
    // Still being stat'ed by a worker that is gone: stat'ed here.
    return now === WORKER_BUSY && !gone;
  };
  return {
    claim: (i) => {
      if (i % chunk !== 0) return undefined;
      const k = i / chunk;
      if (!callerWaits && !decide(k)) return undefined;
      return (async () => {
        if (k === 0 && callerWaits === 'exit') await exited;
        while (k === 0 && callerWaits === 'claim' && !gone && state.every((claimed) => claimed === FREE)) await new Promise((wake) => setTimeout(wake, 1));
        while (decide(k)) {
          const { async, value } = waitAsync(state, k, WORKER_BUSY);
          if (async) await Promise.race([value, exited]);
        }
      })();
    },
    at: (i) => {
      if (fromWorker[Math.floor(i / chunk)] !== 1) return sync(i);
      statsFromWorker.count++;
      const at = i * 4;
      const size = out[at + 1]!;
      if (size === GONE) return undefined;
      if (size === NOT_A_FILE) return null;
      return { mtimeMs: out[at]!, size, ino: out[at + 2]!, ctimeMs: out[at + 3]! };
    },
    close: () => {
      clearTimeout(timer);
      void worker.terminate();
    },
  };
}
