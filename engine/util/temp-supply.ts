/**
 * Temp files made ahead, off the event loop, for the atomic writes of a busy process.
 *
 * An atomic write creates a temp file beside its target, and creating an inode can cost far more
 * than writing the file: on ext4 without a journal the allocator walks past every inode its group
 * freed in the last minutes (`recently_deleted()`), 0.2–0.4 ms per create on the development VM,
 * with the directory's lock held all along. A batch run makes two such creates per proposal on
 * its event loop. Made ahead in the target's own directory, on another thread, the creates hold
 * that directory's lock while the event loop's renames into it wait (measured twice, no gain:
 * docs/performance.md). So a supply's worker thread creates temp files in lanes — directories of
 * the supply's own, `<store>/.tmp/<owner>~<n>/l0…l3` — a batch at a time, and hands their open
 * descriptors over; a write takes one and moves it into its target's directory under a temp name
 * (one rename, which holds the directory's lock only briefly), and goes on as it always did: a temp
 * file in the target's directory, written, synced and renamed over the target (SPEC §4). The
 * worker never creates in a lane that temp files are being taken (moved) out of: a lane is filled
 * only once every temp file of its last batch has left it.
 *
 * A supply starts once a process has asked for enough temp files (a command's single write never
 * pays for a thread), never makes a caller wait (with none ready the caller creates its own, as
 * before), and removes what it did not hand out when it is closed. A killed process's lanes are
 * swept once the writer named in their directory's name is gone (`sweepTempSupplies`).
 */
import { type Dirent, fstatSync, lstatSync, mkdirSync, opendirSync, readFileSync, renameSync, rmdirSync, type Stats, unlinkSync } from 'node:fs';
import path from 'node:path';
import { inDirectory } from './in-directory.js';
import { closeQuietly, supplySuffix, unlinkQuietly } from './temp-names.js';
import type { Worker } from 'node:worker_threads';

/** The setgid bit of a mode (POSIX; not among Node's fs constants). */
const SETGID = 0o2000;
/** Temp files asked for before a supply starts its thread. */
const START_AFTER = 16;
/** Temp files made in a lane at a time. */
const BATCH = 16;
/** A supply nothing asked for this long lets go of its thread, descriptors and lanes. */
const IDLE_MS = 1000;
/** Fewer open descriptors allowed than this, and no supply starts. */
const MIN_OPEN_FILES = 1024;
/** The mode of a supplied temp file (`writeTemp`'s default; the umask applies as to any create). */
export const SUPPLIED_MODE = 0o644;
/** A supply's own directory under `<store>/.tmp/`: its writer's owner name first, so a sweep knows a dead writer's. */
const SUPPLY_DIR = /^([A-Za-z0-9_.-]+)~[0-9a-z]+$/;

// CommonJS run by the worker (eval): no module of ours to resolve from wherever the bundle is. A
// batch: its temp files created in a lane (O_EXCL, never through a link), their descriptors
// handed over — the process's, whichever thread opened them (the worker is told not to close the
// descriptors it opened when it ends: `trackUnmanagedFds: false`). The first failure ends it.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { constants, lstatSync, openSync } = require('node:fs');
const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const real = (dir) => lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() === true;
// [0]: stop (the process is ending); [1]: a create is under way. Busy is set before stop is read,
// so once the process has set stop and seen busy clear, no file is made after it looks.
const state = new Int32Array(workerData.state);
parentPort.on('message', ({ lane, dirs, names }) => {
  const made = [];
  // .tmp, the supply's directory and the lane, each a real directory (a link swapped in for one
  // since it was made is never followed out of the store).
  let failed = !dirs.every(real);
  const dir = dirs[dirs.length - 1];
  for (const name of failed ? [] : names) {
    Atomics.store(state, 1, 1);
    try {
      if (Atomics.load(state, 0) !== 0) throw new Error('stopped');
      if (!real(dir)) throw new Error('the lane is no longer a directory');
      made.push([openSync(dir + '/' + name, flags, ${SUPPLIED_MODE.toString(8).replace(/^/, '0o')}), name]);
    } catch {
      failed = true;
    } finally {
      Atomics.store(state, 1, 0);
    }
    if (failed) break;
  }
  parentPort.postMessage({ lane, made, failed });
});
`;

/** What the worker sends back: the descriptors and names of the temp files it made in a lane. */
interface Batch {
  lane: number;
  made: [number, string][];
  failed: boolean;
}

/** Lanes: one is taken from while others are filled or wait, full. */
const LANES = 4;
/** Lanes full or being filled at once. */
const AHEAD = 2;

class Lane {
  /** The temp files ready here, open. */
  readonly temps: Temp[] = [];
  filling = false;
  made = false;
  constructor(readonly dir: string) {}
}

export interface Temp {
  fd: number;
  file: string;
}

let suppliesMade = 0;
/** Temp files named, process-wide: two supplies (one store reached by two paths) never make the same name. */
let named = 0;

export class TempSupply {
  private readonly lanes: Lane[];
  /** Full lanes, in the order they were filled. */
  private readonly full: Lane[] = [];
  /** The lane temp files are being taken from. */
  private serving: Lane | undefined;
  /** Target directories a temp file could not be moved into (another file system, no permission…). */
  private readonly refused = new Set<string>();
  /** The group a file made in a target directory takes (see `groupOf`). */
  private readonly groups = new Map<string, number | undefined>();
  private asks = 0;
  private worker: Worker | undefined;
  private failed = false;
  private closed = false;
  private madeOwn = false;
  private settled: (() => void) | undefined;
  /** Shared with the worker: [0] stop making files, [1] a create under way. */
  private readonly state = new Int32Array(new SharedArrayBuffer(8));
  /** Fires once nothing was asked for IDLE_MS (refreshed by each take). */
  private idle: NodeJS.Timeout | undefined;
  readonly own: string;

  constructor(
    readonly parent: string,
    /** The writer's name in the store (its owner file's): what a sweep asks about. */
    owner: string,
  ) {
    this.own = path.join(parent, '.tmp', `${owner}~${(++suppliesMade).toString(36)}`);
    this.lanes = Array.from({ length: LANES }, (_, i) => new Lane(path.join(this.own, `l${i}`)));
  }

  /** The group a file made in `dir` takes (where this process can tell; else the file's own, so no check). */
  private groupOf(dir: string): number | undefined {
    let group = this.groups.get(dir);
    if (group === undefined && !this.groups.has(dir)) {
      const stat = lstatSync(dir, { throwIfNoEntry: false });
      group = stat && (stat.mode & SETGID) !== 0 ? stat.gid : process.getegid?.();
      this.groups.set(dir, group);
    }
    return group;
  }

  /** A temp file made ahead, moved into `dir` and open for writing, or undefined (the caller makes its own). */
  take(dir: string): Temp | undefined {
    if (this.closed || this.failed || this.refused.has(dir)) return undefined;
    this.idle?.refresh();
    if (++this.asks < START_AFTER) return undefined;
    if (!this.serving || this.serving.temps.length === 0) this.serving = this.full.shift();
    const made = this.serving?.temps.pop();
    let temp: Temp | undefined;
    if (made) {
      const file = path.join(dir, path.basename(made.file));
      try {
        const held = fstatSync(made.fd);
        // A file takes its group from where it is made: a setgid directory's, else this process's.
        // One made in a lane and moved where a file would take another group keeps the lane's (a
        // team's shared store would lose its group's access to it): no supply for that directory.
        const group = this.groupOf(dir);
        if (group !== undefined && held.gid !== group) {
          this.refused.add(dir);
          this.serving!.temps.push(made);
          return undefined;
        }
        // Still the empty file the worker made, named only in its lane: nothing was written to it
        // or linked to it there since (a writer of the store could), and nothing but it is moved in.
        const same = (stat: Stats | undefined) => stat?.isFile() === true && stat.ino === held.ino && stat.dev === held.dev;
        if (held.size !== 0 || held.nlink !== 1 || !same(lstatSync(made.file, { throwIfNoEntry: false }))) {
          discard(made);
          this.fail();
        } else {
          renameSync(made.file, file);
          // What was moved is the file the descriptor writes (not one swapped in since the look).
          if (!same(lstatSync(file))) {
            unlinkQuietly(file);
            closeQuietly(made.fd);
            this.fail();
          } else temp = { fd: made.fd, file };
        }
      } catch (error) {
        // Another file system, no permission, not a directory: never asked again for it.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.refused.add(dir);
        discard(made);
      }
    }
    // Only now, once the lane's last temp file has left it, may the worker fill it again.
    if (this.serving?.temps.length === 0) this.serving = undefined;
    this.fill();
    return temp;
  }

  /** Remove every temp file not handed out (those a batch still brings, as they come), then the thread and the lanes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idle);
    this.discardReady();
    if (this.lanes.some((lane) => lane.filling)) {
      // The worker is unref'd: waiting on it alone, the process would end here, its command's exit
      // code never set. Held while the last batch comes (a few milliseconds).
      this.worker?.ref();
      await new Promise<void>((resolve) => (this.settled = resolve));
    }
    await this.worker?.terminate();
    this.removeLanes();
    live.delete(this);
  }

  /**
   * At the process's exit (a `process.exit` before or during `close`): what was not handed out
   * goes, and the files of a batch still being made (their names unknown here: the lanes are
   * listed, once each directory on the way is seen to be a real one).
   */
  leaveAtExit(): void {
    // The worker makes nothing more once it has seen this, and a create under way ends first (a
    // few milliseconds at most; bounded, as an exit must be).
    Atomics.store(this.state, 0, 1);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let waited = 0; Atomics.load(this.state, 1) !== 0 && waited < 200; waited++) Atomics.wait(pause, 0, 0, 1);
    this.discardReady();
    const tmp = path.dirname(this.own);
    for (const lane of this.lanes) {
      if (!lane.filling || ![tmp, this.own, lane.dir].every(isRealDirectory)) continue;
      try {
        for (const entry of entries(lane.dir)) if (entry.isFile() && entry.name.startsWith('.supply.')) unlinkQuietly(path.join(lane.dir, entry.name));
      } catch {
        // gone
      }
      lane.filling = false;
    }
    this.removeLanes();
  }

  /** Close the descriptors and remove the files not handed out. */
  private discardReady(): void {
    for (const lane of this.lanes) for (const temp of lane.temps.splice(0)) discard(temp);
    this.full.length = 0;
    this.serving = undefined;
  }

  /** Remove the lanes, the supply's directory and `.tmp`, each only when empty (by name: never listed). */
  private removeLanes(): void {
    for (const lane of this.lanes) if (lane.made && !lane.filling) removeDir(lane.dir);
    removeDir(this.own);
    removeDir(path.dirname(this.own));
  }

  /** Stop for good (a create failed, the worker is gone, a lane was tampered with): callers make their own. */
  private fail(): void {
    this.failed = true;
    this.discardReady();
    if (!this.lanes.some((lane) => lane.filling)) {
      void this.worker?.terminate();
      this.removeLanes();
    }
  }

  /** Nothing asked for a while: let go of the thread, the descriptors and the lanes until the next burst. */
  private rest(): void {
    if (this.closed || this.failed) return;
    if (this.lanes.some((lane) => lane.filling)) {
      this.idle?.refresh();
      return;
    }
    this.discardReady();
    const worker = this.worker;
    this.worker = undefined;
    worker?.removeAllListeners();
    void worker?.terminate();
    this.removeLanes();
    for (const lane of this.lanes) lane.made = false;
    this.madeOwn = false;
    this.asks = 0;
  }

  /** Fill empty lanes until AHEAD of them are full or being filled. */
  private fill(): void {
    if (this.closed || this.failed) return;
    let ahead = this.full.length + this.lanes.filter((lane) => lane.filling).length;
    for (const lane of this.lanes) {
      if (ahead >= AHEAD) return;
      if (lane.filling || lane.temps.length > 0 || lane === this.serving) continue;
      if (!this.ask(lane)) return;
      ahead++;
    }
  }

  private ask(lane: Lane): boolean {
    if (!this.worker && !this.start()) return false;
    if (!lane.made) {
      try {
        if (!this.madeOwn) {
          // `.tmp` and the supply's directory are made one at a time, and `.tmp` must be a real
          // directory: a link there is never followed out of the store.
          const tmp = path.dirname(this.own);
          mkdirQuietly(tmp);
          if (!lstatSync(tmp).isDirectory()) throw new Error(`${tmp} is not a directory`);
          mkdirSync(this.own, { mode: 0o700 });
          this.madeOwn = true;
        }
        mkdirSync(lane.dir, { mode: 0o700 });
        lane.made = true;
      } catch {
        this.fail();
        return false;
      }
    }
    const names = Array.from({ length: BATCH }, () => `.supply.${process.pid}.${(++named).toString(36)}${supplySuffix}.tmp`);
    lane.filling = true;
    this.worker!.postMessage({ lane: this.lanes.indexOf(lane), dirs: [path.dirname(this.own), this.own, lane.dir], names });
    return true;
  }

  private start(): boolean {
    // A process allowed few descriptors keeps them for its work: the supply holds up to
    // (AHEAD + 1) × BATCH of them.
    if (openFilesLimit() < MIN_OPEN_FILES) {
      this.failed = true;
      return false;
    }
    try {
      // Loaded here: only a process that writes many files starts a thread.
      const { Worker } = process.getBuiltinModule('node:worker_threads');
      this.worker = new Worker(WORKER, {
        eval: true,
        workerData: { state: this.state.buffer },
        trackUnmanagedFds: false,
        resourceLimits: { maxYoungGenerationSizeMb: 2 },
      });
    } catch {
      this.failed = true;
      return false;
    }
    const worker = this.worker;
    worker.on('message', (batch: Batch) => this.arrived(batch));
    // A worker that fails or ends brings no more batches: the supply stops.
    const gone = () => {
      for (const lane of this.lanes) lane.filling = false;
      this.settled?.();
      if (!this.closed) this.fail();
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    // After the listeners (adding one refs the worker again): it never keeps the process alive.
    worker.unref();
    live.add(this);
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', () => {
        for (const supply of live) supply.leaveAtExit();
      });
    }
    this.idle ??= setTimeout(() => this.rest(), IDLE_MS).unref();
    return true;
  }

  private arrived(batch: Batch): void {
    const lane = this.lanes[batch.lane]!;
    lane.filling = false;
    const made = batch.made.map(([fd, name]) => ({ fd, file: path.join(lane.dir, name) }));
    if (this.closed || this.failed) {
      for (const temp of made) discard(temp);
      if (this.closed && !this.lanes.some((each) => each.filling)) this.settled?.();
      if (this.failed) this.fail();
      return;
    }
    lane.temps.push(...made);
    if (made.length > 0) this.full.push(lane);
    // A failed create (a full disk, too many open files): what was made goes, and the supply stops.
    if (batch.failed) this.fail();
  }
}

/** Supplies with a thread running: what the process's exit removes. */
const live = new Set<TempSupply>();
let exitHooked = false;

/** The soft limit of open descriptors (Linux's /proc; elsewhere, as if ample). */
let openFiles: number | undefined;
function openFilesLimit(): number {
  if (openFiles === undefined) {
    openFiles = Number.POSITIVE_INFINITY;
    try {
      const limit = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'latin1'))?.[1];
      if (limit && limit !== 'unlimited') openFiles = Number(limit);
    } catch {
      // not Linux: no limit known
    }
  }
  return openFiles;
}

/** Supplies by the directory whose subdirectories they serve, with how many stores use each. */
const supplies = new Map<string, { supply: TempSupply; users: number }>();

/**
 * Serve the atomic writes into the subdirectories of `parent` (a store's) with temp files made
 * ahead, in a directory named after `owner` (the writer's owner name in that store, alive while it
 * is); returns what stops it (the supply closes when its last user stops).
 */
export function useTempSupply(parent: string, owner: string): () => Promise<void> {
  let entry = supplies.get(parent);
  if (!entry) {
    entry = { supply: new TempSupply(parent, owner), users: 0 };
    supplies.set(parent, entry);
  }
  entry.users++;
  const used = entry;
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    if (--used.users > 0) return;
    if (supplies.get(parent) === used) supplies.delete(parent);
    await used.supply.close();
  };
}

/** A temp file made ahead for a write of `target`, or undefined (the caller makes its own). */
export function takeSupplied(target: string, mode: number | undefined): Temp | undefined {
  if (supplies.size === 0 || (mode !== undefined && mode !== SUPPLIED_MODE)) return undefined;
  const dir = path.dirname(target);
  return supplies.get(path.dirname(dir))?.supply.take(dir);
}

/**
 * Remove the directories of supplies whose writer is gone, with the temp files their lanes still
 * held. `alive` tells a live writer by its owner name (a pid alone is no identity: a restarted
 * container's pid 1, a process on another host); a directory whose last change is
 * younger than `minAgeMs` is left alone (as temp files are).
 */
export function sweepTempSupplies(tmp: string, alive: (owner: string) => boolean, minAgeMs = 10_000): number {
  let removed = 0;
  try {
    // Through descriptors, each level held open (see `inDirectory`): a link swapped in for a
    // directory after it was looked at is never followed, so nothing outside the store is removed.
    removed = inDirectory(tmp, (inTmp) => {
      let count = 0;
      for (const name of entries(inTmp('')).map((entry) => entry.name)) {
        if (!SUPPLY_DIR.test(name) || alive(SUPPLY_DIR.exec(name)![1]!)) continue;
        try {
          const stat = lstatSync(inTmp(name));
          // A link or a file named like a supply's directory is not one: never followed.
          if (!stat.isDirectory() || Date.now() - stat.mtimeMs < minAgeMs) continue;
          inDirectory(inTmp(name), (inSupply) => {
            for (const lane of entries(inSupply(''))) {
              if (!/^l\d+$/.test(lane.name) || !lane.isDirectory()) continue;
              inDirectory(inSupply(lane.name), (inLane) => {
                for (const temp of entries(inLane(''))) if (temp.isFile() && temp.name.endsWith('.tmp')) unlinkSync(inLane(temp.name));
              });
              rmdirSync(inSupply(lane.name));
            }
          });
          rmdirSync(inTmp(name));
          count++;
        } catch {
          // something else in it, swapped, or removed meanwhile: left alone
        }
      }
      return count;
    });
  } catch {
    return 0; // no .tmp, or something other than a directory there
  }
  removeDir(tmp);
  return removed;
}

/** A directory's entries (lstat-typed: a link is a link, never followed). */
function entries(dir: string): Dirent[] {
  const out: Dirent[] = [];
  const listing = opendirSync(dir);
  try {
    for (let entry = listing.readSync(); entry !== null; entry = listing.readSync()) out.push(entry);
  } finally {
    listing.closeSync();
  }
  return out;
}

function discard(temp: Temp): void {
  closeQuietly(temp.fd);
  unlinkQuietly(temp.file);
}

function isRealDirectory(dir: string): boolean {
  return lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() === true;
}

function mkdirQuietly(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

function removeDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (another process's supply), or gone
  }
}
