/**
 * One `lstat` per proposal file is most of what `status` costs on a large store (~4 µs each,
 * 0.4 s at 100,000 here). From 40,000 files on (below that a thread's start-up eats the gain), a
 * worker thread takes the second half while the caller does the first, and hands its results over
 * in shared memory: the two halves run on two cores. Anything that goes wrong with the worker (it
 * cannot start, it fails, it is too slow) only means the caller stats the rest itself.
 */
import { lstatSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';

/** What the signature of a file is made of; `undefined`: gone; `null`: not a regular file. */
export type FileStat = { mtimeMs: number; size: number; ino: number; ctimeMs: number } | null | undefined;

let parallelFrom = 40_000;
/** How long the caller waits for the worker's half before it stats that half itself. */
const WAIT_MS = 30_000;

/** For tests: how many results came from a worker. */
export const statsFromWorker = { count: 0 };

/** For tests: the number of files from which a worker takes half (and the script it runs). */
export function setParallelStatFrom(files: number, script = WORKER): void {
  parallelFrom = files;
  workerScript = script;
}

// CommonJS run by the worker (eval): no module of ours to resolve from wherever the bundle is.
const WORKER = `
const { workerData } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
const { prefix, names, count, suffix, shared } = workerData;
const flag = new Int32Array(shared, 0, 1);
const out = new Float64Array(shared, 8);
try {
  for (let i = 0; i < count; i++) {
    const stat = lstatSync(prefix + names.slice(i * 26, i * 26 + 26) + suffix, { throwIfNoEntry: false });
    const at = i * 5;
    out[at] = !stat ? 0 : stat.isFile() ? 1 : 2;
    if (stat) { out[at + 1] = stat.mtimeMs; out[at + 2] = stat.size; out[at + 3] = stat.ino; out[at + 4] = stat.ctimeMs; }
  }
  Atomics.store(flag, 0, 1);
} catch {
  Atomics.store(flag, 0, 2);
}
`;

let workerScript = WORKER;

function statOne(file: string): FileStat {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (!stat) return undefined;
  return stat.isFile() ? { mtimeMs: stat.mtimeMs, size: stat.size, ino: stat.ino, ctimeMs: stat.ctimeMs } : null;
}

/**
 * The stats of a list of files, read in order; `await ready()` before reading any at or past
 * `from`, and `close()` at the end (a scan that stops early stops the worker with it).
 */
export interface FileStats {
  at(i: number): FileStat;
  from: number;
  ready(): Promise<void>;
  close(): void;
}

/**
 * The stats of `prefix + ids[i] + suffix`. Ids are 26 characters (ULIDs). From `parallelFrom` ids
 * on, a worker that starts now stats the second half; `ready()` waits for it (its exit, its
 * error, or WAIT_MS) without blocking the event loop, and whatever it did not finish is stat'ed
 * here.
 */
export function statFiles(prefix: string, ids: readonly string[], suffix: string): FileStats {
  const sync = (i: number) => statOne(`${prefix}${ids[i]}${suffix}`);
  const alone: FileStats = { at: sync, from: ids.length, ready: async () => {}, close: () => {} };
  if (ids.length < parallelFrom || ids.some((id) => id.length !== 26)) return alone;
  const half = ids.length >> 1;
  const count = ids.length - half;
  let shared: SharedArrayBuffer;
  let worker: Worker;
  try {
    shared = new SharedArrayBuffer(8 + count * 5 * 8);
    // Loaded here: only a listing of tens of thousands of files starts a thread.
    const { Worker } = process.getBuiltinModule('node:worker_threads');
    worker = new Worker(workerScript, { eval: true, workerData: { prefix, names: ids.slice(half).join(''), count, suffix, shared } });
  } catch {
    return alone;
  }
  const flag = new Int32Array(shared, 0, 1);
  const out = new Float64Array(shared, 8);
  // Settled when the worker is gone: its flag then says whether it finished.
  let timer: NodeJS.Timeout | undefined;
  const gone = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      void worker.terminate();
      resolve();
    }, WAIT_MS);
    const end = () => {
      clearTimeout(timer);
      resolve();
    };
    worker.once('exit', end);
    worker.once('error', end);
  });
  const close = () => {
    clearTimeout(timer);
    void worker.terminate();
  };
  let done = false;
  return {
    from: half,
    close,
    ready: async () => {
      await gone;
      done = Atomics.load(flag, 0) === 1;
    },
    at: (i) => {
      if (i < half || !done) return sync(i);
      statsFromWorker.count++;
      const at = (i - half) * 5;
      const kind = out[at];
      if (kind === 0) return undefined;
      if (kind === 2) return null;
      return { mtimeMs: out[at + 1]!, size: out[at + 2]!, ino: out[at + 3]!, ctimeMs: out[at + 4]! };
    },
  };
}
