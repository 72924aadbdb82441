/**
 * Writing a file so that a crash leaves either the old file or the new one, never a torn one: a
 * temp file beside the target, fsynced, renamed (or linked, for a create) into place, and the
 * directory fsynced. Concurrent syncs of one file or directory are shared (group commit). Used by
 * the store for its documents and indexes, and by the configuration cache, the secret files and
 * `viz --out`, none of which depend on the store for it.
 */
import { closeSync, constants, fdatasync, fsync, linkSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { closeQuietly, processSuffix, unlinkQuietly } from './temp-names.js';
import { takeSupplied } from './temp-supply.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

const fsyncAsync = promisify(fsync);
const fdatasyncAsync = promisify(fdatasync);

/** A path in the store that is not a regular file (or, `expected` 'a directory', not a real directory). */
export class NotRegularFile extends Error {
  readonly code = 'ENOTREG';
  constructor(
    readonly file: string,
    readonly what: string,
    readonly expected: 'a regular file' | 'a directory' = 'a regular file',
  ) {
    super(`${file} is ${what}, not ${expected}; the store does not read or write through it`);
  }
}

/**
 * Group commit: concurrent requests to make a file's writes (or a directory's entries) durable
 * share one sync. A request waits for a sync that starts after it was made, because one already
 * running may not cover its write. A request may bring a descriptor of the file, open until the
 * request is answered, for the sync it starts to use instead of opening the file again.
 */
export class GroupSync {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  constructor(private readonly sync: (fd?: number) => Promise<void>) {}

  request(fd?: number): Promise<void> {
    if (!this.running) return this.start(fd);
    // The first request to wait brings the descriptor the next sync uses: it stays open while
    // that request waits, i.e. until the next sync is over.
    this.next ??= this.running.then(
      () => this.startNext(fd),
      () => this.startNext(fd),
    );
    return this.next;
  }

  private startNext(fd: number | undefined): Promise<void> {
    this.next = undefined;
    return this.start(fd);
  }

  private start(fd: number | undefined): Promise<void> {
    const running: Promise<void> = this.sync(fd).finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }
}

const groups = new Map<string, GroupSync>();

async function syncPath(target: string, data: boolean): Promise<void> {
  const fd = openSync(target, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    await (data ? fdatasyncAsync(fd) : fsyncAsync(fd));
  } finally {
    closeSync(fd);
  }
}

/** Make `target`'s writes so far durable, sharing the sync with concurrent requests. */
export function groupSync(target: string, data: boolean): Promise<void> {
  let group = groups.get(target);
  if (!group) {
    group = new GroupSync(() => syncPath(target, data));
    groups.set(target, group);
  }
  return group.request();
}

const openGroups = new Map<string, GroupSync>();

/**
 * Make the data written through `fd` durable, sharing the sync with concurrent requests for the
 * same file: `file` names one inode (a path and its device and inode numbers), never just a path,
 * so a write to a file that replaced another is never answered by a sync of the old one. Each
 * request brings a descriptor of that inode and keeps it open until this resolves; a sync uses
 * the descriptor of the request that started it.
 */
export function groupSyncOpen(file: string, fd: number): Promise<void> {
  let group = openGroups.get(file);
  if (!group) {
    // Every request of these groups brings its descriptor, so a sync always has one.
    group = new GroupSync((open) => fdatasyncAsync(open as number));
    openGroups.set(file, group);
  }
  return group.request(fd);
}

/** Make a directory's entries (renames, links) durable; concurrent calls share one fsync. */
export function fsyncDir(dir: string): Promise<void> {
  return groupSync(dir, false);
}

export interface WriteOptions {
  /** fsync file and directory (default true). Off only for caches. */
  durable?: boolean;
  /** Fail with EEXIST when the target exists. */
  exclusive?: boolean;
  mode?: number;
}

let temps = 0;

/** A temp name beside `target`, unique to this process (swept by pid if the process dies). */
export function tempName(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${(++temps).toString(36)}${processSuffix}.tmp`);
}

export { closeQuietly, unlinkQuietly };

/**
 * Write `data` to a new temp file beside `target` (fsynced when durable); returns its name. In a
 * busy process the file was made ahead by another thread (temp-supply.ts).
 */
export async function writeTemp(target: string, data: string | Uint8Array, options: { durable?: boolean; mode?: number } = {}): Promise<string> {
  const ahead = takeSupplied(target, options.mode);
  const temp = ahead?.file ?? tempName(target);
  const fd = ahead?.fd ?? openSync(temp, 'wx', options.mode ?? 0o644);
  try {
    writeAll(fd, typeof data === 'string' ? Buffer.from(data) : data);
    if (options.durable ?? true) await fsyncAsync(fd);
  } catch (error) {
    closeSync(fd);
    unlinkQuietly(temp);
    throw error;
  }
  closeSync(fd);
  return temp;
}

/**
 * Put a written temp file in place: rename over `target`, or — exclusive — link it there (link()
 * fails when the target exists, so a create never overwrites). The temp name is gone afterwards.
 * A directory at `target` is refused; a symlink at `target` is replaced, never followed.
 */
export function install(temp: string, target: string, exclusive = false): void {
  try {
    if (exclusive) {
      linkSync(temp, target);
      unlinkSync(temp);
    } else {
      renameSync(temp, target);
    }
  } catch (error) {
    unlinkQuietly(temp);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EISDIR' || code === 'ENOTEMPTY' || (code === 'EEXIST' && !exclusive)) throw new NotRegularFile(target, 'a directory');
    throw error;
  }
}

/** Atomically replace (or create) `target` with `data`. */
export async function writeFileAtomic(target: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
  const durable = options.durable ?? true;
  const temp = await writeTemp(target, data, { durable, ...(options.mode !== undefined ? { mode: options.mode } : {}) });
  install(temp, target, options.exclusive);
  if (durable) await fsyncDir(path.dirname(target));
}

/** Write every byte (write(2) may write fewer on a full disk: never install a short file). */
export function writeAll(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) {
    const written = writeSync(fd, data, offset, data.length - offset);
    if (written <= 0) throw Object.assign(new Error('short write'), { code: 'EIO' });
    offset += written;
  }
}
