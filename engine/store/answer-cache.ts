/**
 * The file store's answer cache (SPEC §6: never required for correctness, so nothing here is
 * synced, and whatever cannot be read is a miss).
 *
 * An entry is a record appended to one log that every process shares, `<cache>/log.jsonl`: one
 * line, `{"k":"<sha-256 of the key>","v":<value>}`, written with one write (O_APPEND: concurrent
 * writers never interleave within a line). A file per entry, as before, costs an inode; on some
 * file systems allocating one costs more CPU than the HTTP call whose answer it keeps. Values over
 * 64 KiB, and keys written a second time (derived values that are replaced, not answers), go to a
 * file named by the digest instead, written whole (temp file, rename), and the log then records
 * `{"k":"…","file":true}` once, so the latest record of a key always says where its value is.
 * Files of the earlier layout (one per key) are still read when the log knows nothing of a key.
 *
 * The log is hostile input like every store file: opened without following links, regular files
 * only, lines read up to a bound, a record used only when it parses and its digest matches.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, lstatSync, mkdirSync, promises as fs, readdirSync, readSync } from 'node:fs';
import path from 'node:path';
import { NotRegularFile, writeAll } from '../util/atomic-write.js';
import { createFileAsync, isRealDirectory, openRegularSized, readRegularAsync } from './files.js';
import type { AnswerCache } from './types.js';

const { O_RDONLY, O_RDWR, O_APPEND, O_CREAT } = constants;

const LOG = 'log.jsonl';
/** The largest value kept in the log (bytes of its JSON); larger ones get a file. */
const LOG_VALUE_MAX = 64 * 1024;
/** A record's bytes fit in 17 bits: the index packs a record as offset · SPAN + length. */
const SPAN = 2 ** 17;
/** Past this offset (64 GiB) new entries go to files: a packed offset stays an exact integer. */
const LOG_MAX = Number.MAX_SAFE_INTEGER / SPAN;
const HEAD = Buffer.from('{"k":"');
const DIGEST = 64;
/** The index is keyed by a digest's first 16 hex digits; a record is used only when all 64 match. */
const PREFIX = 16;
const CHUNK = 1 << 20;
const ENTRY_FILE = /^[0-9a-f]{64}\.json$/;

/** The default bound of an entry read without one (a derived value can be large). */
const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;

interface LogRecord {
  k?: unknown;
  v?: unknown;
  file?: unknown;
}

export class FileAnswerCache implements AnswerCache {
  private readonly log: string;
  /** digest prefix → offset · SPAN + length of the key's latest record in the log. */
  private index = new Map<string, number>();
  /** The log's identity (device:inode) the index describes, and how far it has been read. */
  private inode = '';
  private scanned = 0;
  /** Did the directory hold entry files (of the earlier layout) when it was first looked at? */
  private files: boolean | undefined;

  constructor(private readonly dir: string) {
    this.log = path.join(dir, LOG);
  }

  async get(key: string, maxBytes = DEFAULT_MAX_BYTES): Promise<unknown | undefined> {
    try {
      const digest = this.digest(key);
      this.refresh();
      const at = this.index.get(digest.slice(0, PREFIX));
      if (at !== undefined && at % SPAN > maxBytes) return undefined;
      const record = at === undefined ? undefined : this.record(at, digest);
      if (record && record.file !== true) return record.v;
      if (record?.file !== true && !this.files) return undefined;
      const text = await readRegularAsync(path.join(this.dir, `${digest}.json`), maxBytes);
      return text === undefined ? undefined : (JSON.parse(text) as unknown);
    } catch {
      return undefined;
    }
  }

  async put(key: string, value: unknown): Promise<void> {
    if (!isRealDirectory(this.dir)) mkdirSync(this.dir, { recursive: true });
    const digest = this.digest(key);
    const text = JSON.stringify(value);
    this.refresh();
    const at = this.index.get(digest.slice(0, PREFIX));
    if (at === undefined && Buffer.byteLength(text) <= LOG_VALUE_MAX && this.scanned < LOG_MAX && this.append(`{"k":"${digest}","v":${text}}\n`)) return;
    const target = path.join(this.dir, `${digest}.json`);
    const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
    await createFileAsync(temp, Buffer.from(text));
    await fs.rename(temp, target).catch(async (error: unknown) => {
      await fs.unlink(temp).catch(() => {});
      throw error;
    });
    this.files = true;
    if (at === undefined || this.record(at, digest)?.file !== true) this.append(`{"k":"${digest}","file":true}\n`);
  }

  private digest(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  /** Bring the index up to date with the log: start over when it was replaced, read what was appended. */
  private refresh(): void {
    this.files ??= hasEntryFiles(this.dir);
    const stat = lstatSync(this.log, { throwIfNoEntry: false });
    if (!stat?.isFile()) {
      this.forget();
      return;
    }
    const inode = `${stat.dev}:${stat.ino}`;
    if (inode !== this.inode) {
      this.forget();
      this.inode = inode;
    }
    if (stat.size > this.scanned) this.readTail();
  }

  private forget(): void {
    this.index.clear();
    this.inode = '';
    this.scanned = 0;
  }

  /** Index the whole lines appended since the last read (a line still being written waits). */
  private readTail(): void {
    const { fd, inode } = openRegularSized(this.log, O_RDONLY);
    try {
      if (inode !== this.inode) {
        this.forget();
        this.inode = inode;
      }
      let carry = Buffer.alloc(0);
      let offset = this.scanned;
      for (;;) {
        const chunk = Buffer.allocUnsafe(CHUNK);
        const read = readSync(fd, chunk, 0, CHUNK, offset + carry.length);
        if (read === 0) break;
        const bytes = carry.length ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
        let start = 0;
        for (let end = bytes.indexOf(10, start); end >= 0; end = bytes.indexOf(10, start)) {
          this.indexLine(bytes, start, end, offset + start);
          start = end + 1;
        }
        offset += start;
        // A line longer than any record is skipped whole, never buffered without bound.
        carry = bytes.length - start < SPAN ? bytes.subarray(start) : Buffer.alloc(0);
        if (carry.length === 0) offset += bytes.length - start;
      }
      this.scanned = offset;
    } finally {
      closeSync(fd);
    }
  }

  private indexLine(bytes: Buffer, start: number, end: number, at: number): void {
    const length = end - start;
    if (length >= SPAN || length < HEAD.length + DIGEST + 2) return;
    if (bytes.compare(HEAD, 0, HEAD.length, start, start + HEAD.length) !== 0) return;
    const digest = bytes.toString('latin1', start + HEAD.length, start + HEAD.length + PREFIX);
    this.index.set(digest, at * SPAN + length);
  }

  /** The record at packed position `at`, when it parses and belongs to `digest`. */
  private record(at: number, digest: string): LogRecord | undefined {
    const offset = Math.floor(at / SPAN);
    const length = at % SPAN;
    const { fd, inode } = openRegularSized(this.log, O_RDONLY);
    try {
      if (inode !== this.inode) return undefined;
      const buffer = Buffer.allocUnsafe(length);
      if (readSync(fd, buffer, 0, length, offset) !== length) return undefined;
      const record = JSON.parse(buffer.toString('utf8')) as LogRecord;
      return record && typeof record === 'object' && record.k === digest ? record : undefined;
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Append one record: one write, after a newline when a torn record ends the log. False when
   * something other than a regular file is where the log belongs (the entry then gets a file).
   */
  private append(line: string): boolean {
    let opened: { fd: number; size: number };
    try {
      opened = openRegularSized(this.log, O_RDWR | O_APPEND | O_CREAT);
    } catch (error) {
      if (error instanceof NotRegularFile) return false;
      throw error;
    }
    const { fd, size } = opened;
    try {
      const last = Buffer.alloc(1);
      const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 10;
      writeAll(fd, Buffer.from(torn ? `\n${line}` : line));
      return true;
    } finally {
      closeSync(fd);
    }
  }
}

function hasEntryFiles(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => ENTRY_FILE.test(name));
  } catch {
    return false;
  }
}
