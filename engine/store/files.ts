/**
 * The file primitives every store read and append goes through (whole files are replaced by
 * `util/atomic-write.ts`).
 *
 * Nothing is truncated in place: a file is replaced by writing a temp file in the same
 * directory, fsyncing it, renaming it over the old one and fsyncing the directory; a ledger or
 * log row is one whole line appended with one write.
 *
 * Nothing is followed out of the store and nothing blocks: files are opened with O_NOFOLLOW and
 * O_NONBLOCK and must be regular files (a symlink, FIFO, socket or directory where a file should
 * be is reported, never read through or written through).
 *
 * The cheap system calls are synchronous on purpose: each takes a few microseconds, while a trip
 * through libuv's thread pool costs more than the call itself. The fsyncs stay asynchronous, so
 * the commits of concurrent work overlap, and concurrent syncs of one file or directory are
 * shared (group commit).
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, opendirSync, openSync, promises as fs, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import { groupSyncOpen, NotRegularFile, writeAll } from '../util/atomic-write.js';
import { fileKind } from '../util/file-kind.js';
import { madeHere } from '../util/temp-names.js';
import { isAlive } from './process-identity.js';

const { O_RDONLY, O_WRONLY, O_RDWR, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Open `file` without following a link or blocking; it must be a regular file. */
function openRegular(file: string, flags: number, mode = 0o644): number {
  return openRegularSized(file, flags, mode).fd;
}

/** `openRegular`, with the size and identity its fstat saw (so a reader need not stat the file again). */
export function openRegularSized(file: string, flags: number, mode = 0o644): { fd: number; size: number; inode: string; stat: Stats } {
  let fd: number;
  try {
    fd = openSync(file, flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new NotRegularFile(file, 'a symbolic link');
    if (code === 'EISDIR') throw new NotRegularFile(file, 'a directory');
    if (code === 'ENXIO') throw new NotRegularFile(file, 'a FIFO or socket');
    // Node's error does not say what the open was for: a refusal to read is told from one to write.
    if ((code === 'EACCES' || code === 'EPERM') && (flags & (O_WRONLY | O_RDWR | O_CREAT)) === 0) Object.assign(error as object, { reading: true });
    throw error;
  }
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw new NotRegularFile(file, fileKind(stat));
  }
  return { fd, size: stat.size, inode: `${stat.dev}:${stat.ino}`, stat };
}

/**
 * Where a small file is read: one read, decoded to a string at once, so reading a file does not
 * allocate a buffer for it (a fresh ArrayBuffer per file was a fifth of what a listing of 1,000
 * proposals spent reading them). Synchronous use only: nothing else runs between the read and the
 * decoding.
 */
const SCRATCH = Buffer.allocUnsafe(64 * 1024);

/** Read all of an open file, `first` being what was already read of it; undefined past `max` bytes (never reading more than one byte past). */
function readAllFd(fd: number, size: number, first?: Buffer, max = Number.POSITIVE_INFINITY): Buffer | undefined {
  const chunks: Buffer[] = first ? [first] : [];
  let total = first?.length ?? 0;
  const chunk = Math.max(size + 1 - total, 4096);
  for (;;) {
    if (total > max) return undefined;
    const want = Math.min(chunk, max + 1 - total);
    const buffer = Buffer.allocUnsafe(want);
    const read = readSync(fd, buffer, 0, want, null);
    if (read === 0) break;
    chunks.push(buffer.subarray(0, read));
    total += read;
    // A regular file on a local file system reads short only at its end: no second read to learn that it is over.
    if (read < want) break;
  }
  if (total > max) return undefined;
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/**
 * The most a document of the store — a proposal, a pool entry — may hold. A larger one is
 * malformed, and never read whole: one planted file must not cost every listing its memory.
 */
export const DOCUMENT_MAX_BYTES = 16 * 1024 * 1024;

/** A document larger than it may be; `stat`: what its open saw (its signature). */
export class TooLarge extends Error {
  constructor(
    readonly file: string,
    readonly stat: Stats,
  ) {
    super(`${file} is larger than ${DOCUMENT_MAX_BYTES / (1024 * 1024)} MiB`);
  }
}

/** A regular file opened to read it, with its size; undefined when it does not exist. */
function openToRead(file: string): { fd: number; size: number; stat: Stats } | undefined {
  try {
    return openRegularSized(file, O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The text of a regular file; undefined when it does not exist. Throws NotRegularFile, and TooLarge past `max` bytes. */
export function readRegular(file: string, max?: number): string | undefined {
  const opened = openToRead(file);
  if (!opened) return undefined;
  try {
    const text = readOpened(opened.fd, opened.size, max);
    if (text === undefined) throw new TooLarge(file, opened.stat);
    return text;
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * `readRegular`, with what the open file's fstat said of it: for a reader that would otherwise
 * `lstat` the file first (the open refuses a link or a FIFO as an `lstat` would show it).
 */
export function readRegularStat(file: string, max?: number): { text: string; stat: Stats } | undefined {
  const opened = openToRead(file);
  if (!opened) return undefined;
  try {
    const text = readOpened(opened.fd, opened.size, max);
    if (text === undefined) throw new TooLarge(file, opened.stat);
    return { text, stat: opened.stat };
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * The text of an open regular file whose fstat said `size` (it may have grown or shrunk since);
 * undefined when it holds more than `max` bytes.
 */
export function readOpened(fd: number, size: number, max = Number.POSITIVE_INFINITY): string | undefined {
  if (size > max) return undefined;
  if (size >= SCRATCH.length) return readAllFd(fd, size, undefined, max)?.toString('utf8');
  const read = readSync(fd, SCRATCH, 0, SCRATCH.length, null);
  // A regular file on a local file system reads short only at its end; one that grew past the
  // scratch since the fstat is read on.
  if (read < SCRATCH.length) return read > max ? undefined : SCRATCH.toString('utf8', 0, read);
  return readAllFd(fd, size, Buffer.from(SCRATCH), max)?.toString('utf8');
}

/** `readRegular`, refusing (RangeError) a file over `maxBytes`; never reads more than that. */
export function readRegularBounded(file: string, maxBytes: number): string | undefined {
  return readBounded(file, maxBytes, Buffer.allocUnsafe)?.toString('utf8');
}

/**
 * The bytes of a regular file, in a buffer of their own (at offset 0 of its memory, so typed
 * arrays can view them); undefined when it does not exist. Refuses (RangeError) a file over
 * `maxBytes`, and never reads more than that.
 */
export function readRegularBytes(file: string, maxBytes: number): Buffer | undefined {
  return readBounded(file, maxBytes, Buffer.allocUnsafeSlow);
}

function readBounded(file: string, maxBytes: number, allocate: (size: number) => Buffer): Buffer | undefined {
  const opened = openToRead(file);
  if (!opened) return undefined;
  const { fd, size } = opened;
  try {
    // Never more than maxBytes + 1 read, even from a file that grew since the fstat.
    const buffer = allocate(Math.min(size, maxBytes) + 1);
    let done = 0;
    for (let read = -1; read !== 0 && done < buffer.length; done += read) read = readSync(fd, buffer, done, buffer.length - done, null);
    if (done > maxBytes) throw new RangeError(`${file} is larger than ${maxBytes} bytes`);
    return buffer.subarray(0, done);
  } finally {
    closeSync(fd);
  }
}

/** The bytes of a regular file from `offset` to its end (empty when missing or shorter). */
export function readRegularFrom(file: string, offset: number, length = Number.POSITIVE_INFINITY): Buffer {
  let fd: number;
  try {
    fd = openRegular(file, O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw error;
  }
  try {
    const { size } = fstatSync(fd);
    if (size <= offset) return Buffer.alloc(0);
    const buffer = Buffer.allocUnsafe(Math.min(size - offset, length));
    let done = 0;
    while (done < buffer.length) {
      const read = readSync(fd, buffer, done, buffer.length - done, offset + done);
      if (read === 0) break;
      done += read;
    }
    return buffer.subarray(0, done);
  } finally {
    closeSync(fd);
  }
}

/** The size of a regular file (0 when missing). Throws NotRegularFile. */
export function sizeOf(file: string): number {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isFile()) throw new NotRegularFile(file, fileKind(stat));
  return stat.size;
}

/**
 * May a derived cache (`.index/…`) be kept in `dir`: a real directory, or nothing yet (made when
 * the cache is first written)? A link or anything else there is never read or written through.
 */
export function cacheDirUsable(dir: string): boolean {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  return stat === undefined || stat.isDirectory();
}

/** Make a derived cache's directory; throws when what is there is not a real directory (a link put there). */
export function makeCacheDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
  if (!isRealDirectory(dir)) throw new Error(`${dir} is gone`);
}

/** Is `dir` a real directory (not a link to one)? Throws NotRegularFile for anything else there. */
export function isRealDirectory(dir: string): boolean {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (!stat) return false;
  if (stat.isDirectory()) return true;
  throw new NotRegularFile(dir, fileKind(stat), 'a directory');
}

/** The byte of an open file at `offset`, or undefined past its end. */
export function lastByteAt(fd: number, offset: number): number | undefined {
  const byte = Buffer.alloc(1);
  return readSync(fd, byte, 0, 1, offset) === 1 ? byte[0] : undefined;
}

/**
 * A killed process's write stops at a page boundary: the kernel copies a write into the page cache
 * a page at a time and gives up between pages once the process is being killed. Every page size
 * in use is a multiple of this one.
 */
const PAGE = 4096;

/**
 * How long the end of a log must hold still before it is taken for what a dead writer left: a live
 * writer's append grows the file a page at a time too, and looks the same while it lasts.
 */
const SETTLE_MS = 50;

/**
 * Where `file` ends with the beginning of `line` the way a killed write leaves it: the file ends
 * mid-line at a page boundary, and the bytes of that last line — which starts at or after
 * `offset` — are a proper prefix of `line`. Undefined otherwise (or when the file cannot be read
 * as a regular file).
 */
function tornLine(file: string, offset: number, line: Buffer): { at: number; size: number; rest: Buffer } | undefined {
  let opened: { fd: number; size: number };
  try {
    opened = openRegularSized(file, O_RDONLY);
  } catch {
    return undefined;
  }
  const { fd, size } = opened;
  try {
    if (size % PAGE !== 0 || size <= offset) return undefined;
    // The last line's bytes, and the one before them: a newline, or the log's start.
    const from = Math.max(offset, size - line.length) - (offset > 0 ? 1 : 0);
    const tail = Buffer.alloc(size - Math.max(0, from));
    if (readSync(fd, tail, 0, tail.length, Math.max(0, from)) !== tail.length) return undefined;
    const newline = tail.lastIndexOf(0x0a);
    const start = newline >= 0 ? newline + 1 : from <= 0 ? 0 : -1;
    const at = Math.max(0, from) + start;
    if (start < 0 || at < offset) return undefined;
    const begun = tail.subarray(start);
    if (begun.length === 0 || begun.length >= line.length || !line.subarray(0, begun.length).equals(begun)) return undefined;
    return { at, size, rest: line.subarray(begun.length) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Finish `line`, which a killed write left begun at the end of `file` (see `tornLine`), by
 * appending the rest of its bytes; true when the line is then whole in the file. The end of the
 * file must first hold still for SETTLE_MS, and the line is read back afterwards: a live writer's
 * append that was under way, or that landed between, leaves the line broken, and false then tells
 * the caller to write it whole on a fresh line. The caller holds the log's tail lock.
 */
export async function finishTornLine(file: string, offset: number, line: Buffer): Promise<boolean> {
  const first = tornLine(file, offset, line);
  if (!first) return false;
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const torn = tornLine(file, offset, line);
  if (!torn || torn.at !== first.at || torn.size !== first.size) return false;
  await appendDurably(file, torn.rest); // bytes: the cut may fall inside a character
  try {
    return readRegularFrom(file, torn.at, line.length).equals(line);
  } catch {
    return false;
  }
}

/** A regular file's size and last byte (undefined when missing or empty). */
function tailOf(file: string): { size: number; last: number | undefined } | undefined {
  let opened: { fd: number; size: number };
  try {
    opened = openRegularSized(file, O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return { size: opened.size, last: opened.size === 0 ? undefined : lastByteAt(opened.fd, opened.size - 1) };
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * Give a log that ends mid-line its newline — once its end has held still for SETTLE_MS: a live
 * writer's append under way ends mid-line too, and a newline added then would land after it, an
 * empty line. The caller holds the log's tail lock, and appends again either way.
 */
export async function endLine(file: string): Promise<void> {
  const first = tailOf(file);
  if (first?.last === undefined || first.last === 0x0a) return;
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const again = tailOf(file);
  if (again?.size === first.size && again.last !== 0x0a) appendText(file, '\n');
}

/** Open `file` to append to it (`access`: O_WRONLY, or O_RDWR to read it too), creating it if need be (`created`). */
function openAppend(file: string, access = O_WRONLY): { fd: number; inode: string; size: number; created: boolean } {
  try {
    return { ...openRegularSized(file, access | O_APPEND), created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return { ...openRegularSized(file, access | O_APPEND | O_CREAT), created: true };
  }
}

/**
 * Append whole lines with one write (O_APPEND: concurrent appenders never interleave within a
 * line). Returns whether the file was created by this append (its directory entry then needs a
 * sync of the directory to be durable).
 */
export function appendText(file: string, text: string): { created: boolean } {
  const { fd, created } = openAppend(file);
  try {
    writeAll(fd, Buffer.from(text));
  } finally {
    closeSync(fd);
  }
  return { created };
}

/**
 * `appendText`, then wait until the text is durable: the sync uses the descriptor the text was
 * written through (not the file opened again) and is shared with concurrent appends to the same
 * file — the same inode, not just the same name, so an append to a file that replaced another
 * (a journal removed and made again) is never answered by a sync of the old one.
 *
 * `afterLine`: only onto a file that ends with a newline (or is empty). One that ends mid-line
 * gets nothing (`midLine`): a process killed while it appended left half a line there — the
 * kernel ends a killed process's write at a page boundary — and text appended to it would be
 * glued to that half, and lost with it. The caller finishes the line first. Asked of every append,
 * since such a half line can appear at any moment another writer is killed.
 */
export async function appendDurably(
  file: string,
  text: string | Uint8Array,
  options: { afterLine?: boolean } = {},
): Promise<{ created: boolean; midLine?: true }> {
  const { fd, inode, size, created } = openAppend(file, options.afterLine ? O_RDWR : O_WRONLY);
  try {
    if (options.afterLine && size > 0 && lastByteAt(fd, size - 1) !== 0x0a) return { created, midLine: true };
    writeAll(fd, typeof text === 'string' ? Buffer.from(text) : text);
    await groupSyncOpen(`${file}\u0000${inode}`, fd);
  } finally {
    closeSync(fd);
  }
  return { created };
}

/** Is a process of this host alive? (For temp files, whose names carry only a pid.) */
export function pidAlive(pid: number): boolean {
  return isAlive({ pid });
}

/** A temp file's name (see `tempName`): the pid of the process that wrote it, and its counter and suffix. */
const TEMP_NAME = /\.(\d+)\.([0-9a-z]+)\.tmp$/;

/**
 * Did a process that is alive write the temp file named `pid`, `tail`? One with this process's
 * pid but not its suffix was left by an earlier process that had the same pid (a restarted
 * container's pid 1): dead.
 */
function writerAlive(pid: number, tail: string): boolean {
  if (pid === process.pid) return madeHere(tail);
  return pidAlive(pid);
}

/**
 * Remove the temp files (`….<pid>.<random>.tmp`) that killed processes left in `dirs`: a temp
 * file of a live process, or a young one, is left alone. Returns how many were removed. A
 * directory is read a batch of names at a time and none is kept: the proposals directory of a
 * large store holds 100,000 names, and an array of them all was a run's largest allocation before
 * its first proposal.
 */
export async function sweepTemps(dirs: readonly string[], minAgeMs = 10_000): Promise<number> {
  let removed = 0;
  for (const dir of dirs) {
    const leftovers: string[] = [];
    try {
      const listing = opendirSync(dir, { bufferSize: 1024 });
      try {
        for (let seen = 1, entry = listing.readSync(); entry !== null; seen++, entry = listing.readSync()) {
          if (entry.name.endsWith('.tmp') && TEMP_NAME.test(entry.name)) leftovers.push(entry.name);
          // A long listing lets the event loop run now and then.
          if (seen % 8192 === 0) await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        listing.closeSync();
      }
    } catch {
      // gone, not a directory, or unreadable: nothing to sweep there
    }
    for (const name of leftovers) {
      const match = TEMP_NAME.exec(name)!;
      if (writerAlive(Number(match[1]), match[2]!)) continue;
      const file = path.join(dir, name);
      const stat = lstatSync(file, { throwIfNoEntry: false });
      if (!stat || !stat.isFile() || Date.now() - stat.mtimeMs < minAgeMs) continue;
      await fs.unlink(file).then(
        () => removed++,
        () => {},
      );
    }
  }
  return removed;
}

/** Split JSONL text into rows; torn or garbage lines are skipped. */
export function parseJsonLines(text: string): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as unknown;
      if (value && typeof value === 'object' && !Array.isArray(value)) rows.push(value as Record<string, unknown>);
    } catch {
      // a torn line is not a row
    }
  }
  return rows;
}
