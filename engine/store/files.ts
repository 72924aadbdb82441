/**
 * The file primitives every store write goes through. Nothing is truncated in place: a file is
 * replaced by writing a temp file in the same directory, fsyncing it, renaming it over the old
 * one and fsyncing the directory; a ledger row is one whole line appended with one write.
 *
 * Hand-written rather than `write-file-atomic` because that package does not fsync the directory
 * (the rename is not durable without it) and queues writes per file name in-process, which
 * the store's own per-proposal lock already does across processes.
 *
 * The cheap system calls are synchronous on purpose: each takes a few microseconds, while a trip
 * through libuv's thread pool costs more than the call itself. The fsyncs stay asynchronous, so
 * the commits of concurrent work overlap and the file system can group them into one journal
 * commit.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fdatasync, fstatSync, fsync, linkSync, openSync, promises as fs, readFileSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { isAlive } from './process-identity.js';

/** Per process, so two processes that reuse a pid never collide on a temp name. */
const randomSuffix = randomBytes(3).toString('hex');

const fsyncAsync = promisify(fsync);
const fdatasyncAsync = promisify(fdatasync);

/**
 * Group commit: concurrent requests to make a directory's entries (or a log's appends) durable
 * share one sync. A request waits for a sync that starts after it was made, because one already
 * running may not cover its write.
 */
export class GroupSync {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  constructor(private readonly sync: () => Promise<void>) {}

  request(): Promise<void> {
    if (!this.running) return this.start();
    this.next ??= this.running.then(
      () => this.startNext(),
      () => this.startNext(),
    );
    return this.next;
  }

  private startNext(): Promise<void> {
    this.next = undefined;
    return this.start();
  }

  private start(): Promise<void> {
    const running: Promise<void> = this.sync().finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }
}

const groups = new Map<string, GroupSync>();

async function syncPath(target: string, data: boolean): Promise<void> {
  const fd = openSync(target, constants.O_RDONLY);
  try {
    await (data ? fdatasyncAsync(fd) : fsyncAsync(fd));
  } finally {
    closeSync(fd);
  }
}

/** Make `target`'s writes so far durable, sharing the sync with concurrent requests. */
function groupSync(target: string, data: boolean): Promise<void> {
  let group = groups.get(target);
  if (!group) {
    group = new GroupSync(() => syncPath(target, data));
    groups.set(target, group);
  }
  return group.request();
}

export interface WriteOptions {
  /** fsync file and directory (default true). Off only for caches. */
  durable?: boolean;
  /** Fail with EEXIST when the target exists. */
  exclusive?: boolean;
  mode?: number;
}

/** Make a directory's entries (renames, links) durable; concurrent calls share one fsync. */
export function fsyncDir(dir: string): Promise<void> {
  return groupSync(dir, false);
}

let temps = 0;

/** A temp name beside `target`, unique to this process (swept by pid if the process dies). */
function tempName(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${(++temps).toString(36)}${randomSuffix}.tmp`);
}

/** Atomically replace (or create) `target` with `data`. */
export async function writeFileAtomic(target: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
  const durable = options.durable ?? true;
  const temp = tempName(target);
  const fd = openSync(temp, 'wx', options.mode ?? 0o644);
  try {
    writeAll(fd, typeof data === 'string' ? Buffer.from(data) : data);
    if (durable) await fsyncAsync(fd);
  } catch (error) {
    closeSync(fd);
    try {
      unlinkSync(temp);
    } catch {
      // already gone
    }
    throw error;
  }
  closeSync(fd);
  try {
    if (options.exclusive) {
      // link() fails when the target exists, so a create never overwrites.
      linkSync(temp, target);
      unlinkSync(temp);
    } else {
      renameSync(temp, target);
    }
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // already gone
    }
    throw error;
  }
  if (durable) await fsyncDir(path.dirname(target));
}

/**
 * Append one JSON row as a single line in one write. If an earlier writer was killed mid-line,
 * the row starts on a fresh line so it is never glued to the torn one.
 */
export async function appendLine(file: string, row: unknown, options: { durable?: boolean } = {}): Promise<void> {
  const line = `${JSON.stringify(row)}\n`;
  // A file this append creates needs its directory entry made durable too.
  const creating = !knownFiles.has(file) && !existsSync(file);
  const fd = openSync(file, 'a+');
  try {
    const { size } = fstatSync(fd);
    let prefix = '';
    if (size > 0) {
      const last = Buffer.alloc(1);
      readSync(fd, last, 0, 1, size - 1);
      if (last[0] !== 0x0a) prefix = '\n';
    }
    writeAll(fd, Buffer.from(prefix + line));
  } finally {
    closeSync(fd);
  }
  knownFiles.add(file);
  // The line is written (whole, one write); concurrent appenders share the data sync.
  if (options.durable ?? true) {
    await groupSync(file, true);
    if (creating) await fsyncDir(path.dirname(file));
  }
}

const knownFiles = new Set<string>();

/** Write every byte (write(2) may write fewer on a full disk: never install a short file). */
export function writeAll(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) {
    const written = writeSync(fd, data, offset, data.length - offset);
    if (written <= 0) throw Object.assign(new Error('short write'), { code: 'EIO' });
    offset += written;
  }
}

/** Is a process of this host alive? (For temp files, whose names carry only a pid.) */
export function pidAlive(pid: number): boolean {
  return isAlive({ pid });
}

/**
 * Remove the temp files (`….<pid>.<random>.tmp`) that killed processes left in `dirs`: a temp
 * file of a live process, or a young one, is left alone. Returns how many were removed.
 */
export async function sweepTemps(dirs: readonly string[], minAgeMs = 10_000): Promise<number> {
  let removed = 0;
  for (const dir of dirs) {
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const match = /\.(\d+)\.[0-9a-z]+\.tmp$/.exec(name);
      if (!match || pidAlive(Number(match[1]))) continue;
      const file = path.join(dir, name);
      const stat = await fs.stat(file).catch(() => undefined);
      if (!stat || Date.now() - stat.mtimeMs < minAgeMs) continue;
      await fs.unlink(file).then(() => removed++, () => {});
    }
  }
  return removed;
}

/** Read a JSONL file; torn or garbage lines are skipped (and counted). */
export async function readJsonLines(file: string): Promise<{ rows: Record<string, unknown>[]; skipped: number }> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { rows: [], skipped: 0 };
    throw error;
  }
  const rows: Record<string, unknown>[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as unknown;
      if (value && typeof value === 'object' && !Array.isArray(value)) rows.push(value as Record<string, unknown>);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return { rows, skipped };
}

/** The text of `file` from byte `offset` to its end ('' when missing or shorter). */
export async function readFrom(file: string, offset: number): Promise<string> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
  try {
    const { size } = await handle.stat();
    if (size <= offset) return '';
    const buffer = Buffer.alloc(size - offset);
    await handle.read(buffer, 0, buffer.length, offset);
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}

export async function readTextIfExists(file: string): Promise<string | undefined> {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
