/**
 * The file store's answer cache (SPEC §6: never required for correctness, so nothing here is
 * synced, and whatever cannot be read is a miss).
 *
 * An entry is a record appended to one log that every process shares, `<cache>/log.jsonl`: one
 * line, `{"k":"<sha-256 of the key>","v":<value>}`, written with one write (O_APPEND: concurrent
 * writers never interleave within a line). A file per entry, as before, costs an inode; on some
 * file systems allocating one costs more CPU than the HTTP call whose answer it keeps. Values over
 * 64 KiB, and keys written a second time (derived values that are replaced, not answers), go to a
 * file named by the digest instead, written whole (temp file, rename), as every entry was before.
 * A key's file wins over its record: a record is appended only for a key the log has none of,
 * after any file of the key is removed, so in one writer's order a file is never older than a
 * record. (A lookup costs a failed stat more; a failed stat allocates nothing.) Two writers of one
 * key at once, or a key's file removed by hand, can bring back an older value of it: `put` is only
 * given validated answers for the key's prompt (`providers/call.ts`), and any of them is a right
 * answer — a value that must be the latest goes through `putBytes`. A process indexes the records it appends as
 * it writes them, unless another process appended around them: those are read like any other.
 * The descriptor a process appends through stays open while the log at its path is that file, so
 * a put costs a write and two checks (the log's size, its first line), not an open and a close.
 * A derived value kept as bytes (`putBytes`) is a file of its own, `<digest>.bin`, never in the log.
 *
 * The log is hostile input like every store file: opened without following links, regular files
 * only, lines read up to a bound, a record used only when it parses and its digest matches.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, readSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { closeQuietly, writeAll, writeFileAtomic } from '../util/atomic-write.js';
import { isRealDirectory, lastByteAt, openRegularSized, readRegularBounded, readRegularBytes } from './files.js';
import type { AnswerCache } from './types.js';

const { O_RDONLY, O_RDWR, O_APPEND, O_CREAT } = constants;

const LOG = 'log.jsonl';
/** The largest value kept in the log (bytes of its JSON); larger ones get a file. */
const LOG_VALUE_MAX = 64 * 1024;
/** A record's bytes fit in 17 bits: the index packs a record as offset · SPAN + length. */
const SPAN = 2 ** 17;
/**
 * How much of the log is indexed (and so read by each process, once): past it the log is full and
 * new entries get files, as before the log. Bounds the time and memory a hostile or old log costs.
 */
let LOG_MAX = 64 * 1024 * 1024;
/**
 * And how many records (lines that look like one, whatever their key: a log of one key repeated
 * counts as many), and lines, of it: a log of the smallest records the index takes (72 bytes) or
 * of empty lines made its first reader spend 1.5 s on the event loop reading 64 MiB (a review),
 * past the second in which a run must answer Ctrl-C; answers are hundreds of bytes.
 */
let RECORDS_MAX = 200_000;
let LINES_MAX = 4_000_000;

/** For tests: smaller bounds (a log at the real ones takes a second to write); no argument puts the real ones back. */
export function setLogBounds(bounds: { bytes?: number; records?: number; lines?: number } = {}): void {
  LOG_MAX = bounds.bytes ?? 64 * 1024 * 1024;
  RECORDS_MAX = bounds.records ?? 200_000;
  LINES_MAX = bounds.lines ?? 4_000_000;
}
const HEAD = Buffer.from('{"k":"');
const DIGEST = 64;
/** The index is keyed by a digest's first 16 hex digits; a record is used only when all 64 match. */
const PREFIX = 16;
const CHUNK = 1 << 20;
/** The log's first line names this log: one made again (even on a reused inode) is another log. */
const FIRST_LINE_MAX = 128;

/**
 * How many keys' digests are remembered between a lookup and the put that follows it, and the
 * longest key remembered (a key holds a whole prompt; a lookup with no put after it — an outage —
 * leaves its key here until it is pushed out, so at most 128 × 16 KiB are held).
 */
const DIGESTS_KEPT = 128;
const DIGEST_KEY_MAX = 16 * 1024;

/** The default bound of an entry read without one (a derived value can be large). */
const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;

interface LogRecord {
  k?: unknown;
  v?: unknown;
}

export class FileAnswerCache implements AnswerCache {
  private readonly log: string;
  /** digest prefix → offset · SPAN + length of the key's latest record in the log. */
  private index = new Map<string, number>();
  /** The log the index describes — its device:inode and first line — and how far it has been read. */
  private inode = '';
  private first: string | undefined;
  private scanned = 0;
  /** Digests of keys looked up and not yet put (a missed key is put after its call): hashed once. */
  private readonly digests = new Map<string, string>();
  /** The log's append descriptor and its device:inode, kept open between puts (see `append`). */
  private appender: { fd: number; inode: string } | undefined;
  /** The size the last `refresh` saw at the log's path. */
  private seen = -1;
  /** Does what the index has read of the log end with a newline? (A long torn line it skipped does not.) */
  private endsLine = false;
  /** Is the index partway through a line longer than any record (read on from there, it is passed over to its end)? */
  private skipping = false;
  /** Records and lines the index has read of this log (or appended to it), and whether it stopped at RECORDS_MAX or LINES_MAX. */
  private records = 0;
  private lines = 0;
  private counted = false;

  constructor(private readonly dir: string) {
    this.log = path.join(dir, LOG);
  }

  /** Never throws: whatever cannot be read is a miss. */
  async get(key: string, maxBytes = DEFAULT_MAX_BYTES): Promise<unknown | undefined> {
    try {
      // Nothing is read through a link where the cache directory belongs (it throws: a miss).
      if (!isRealDirectory(this.dir)) return undefined;
      const digest = this.digest(key, true);
      // A key's file is never older than its record in the log (a record is appended only for a
      // key with none there yet, after its file is removed): the file wins. Most keys have none,
      // and a failed stat costs a fraction of a failed open (whose error Node builds, with a stack).
      const file = path.join(this.dir, `${digest}.json`);
      if (lstatSync(file, { throwIfNoEntry: false })) {
        const text = readRegularBounded(file, maxBytes);
        if (text !== undefined) {
          this.digests.delete(key);
          return JSON.parse(text) as unknown;
        }
      }
      for (let attempt = 0; attempt < 2; attempt++) {
        this.refresh();
        const at = this.index.get(digest.slice(0, PREFIX));
        if (at === undefined || at % SPAN > maxBytes) return undefined;
        const record = this.record(at, digest);
        // record() forgets an index that describes another log (one made again on the same inode,
        // say): then the log is read afresh, once.
        if (record) this.digests.delete(key);
        if (record || this.inode !== '') return record?.v;
      }
      return undefined;
    } catch {
      return undefined;
    }
  }

  /** Fails only where a file per entry would: a log it cannot use means the entry gets a file. */
  async put(key: string, value: unknown): Promise<void> {
    // A removed (or never made) cache directory is made again; a link or anything else where it
    // belongs is refused — every time: the log's own lstat would follow a link put there.
    if (!isRealDirectory(this.dir)) mkdirSync(this.dir, { recursive: true });
    let usable = true;
    try {
      this.refresh();
    } catch {
      usable = false;
    }
    if (this.full()) this.closeAppender(); // nothing more is appended
    const digest = this.digest(key);
    const text = JSON.stringify(value);
    const target = path.join(this.dir, `${digest}.json`);
    const at = usable ? this.index.get(digest.slice(0, PREFIX)) : undefined;
    const record = `{"k":"${digest}","v":${text}}\n`;
    // A key's first value goes to the log, after any older file of it is removed (a file wins) —
    // when the record, and whatever goes before it (a first line, a newline), ends within the part
    // of the log that is indexed: past it, no reader would ever find it.
    const fits = Buffer.byteLength(text) <= LOG_VALUE_MAX && !this.full() && this.scanned + FIRST_LINE_MAX + 1 + Buffer.byteLength(record) <= LOG_MAX;
    if (usable && at === undefined && fits && removeQuietly(target)) {
      if (this.append(digest, record)) return;
    }
    await writeFileAtomic(target, text, { durable: false });
  }

  /**
   * A derived value's bytes: a file of their own, `<digest>.bin` (the digest of the key, as for
   * a JSON entry's file), written whole (temp file, rename). Never throws: what cannot be read
   * (missing, over `maxBytes`, not a regular file) is a miss.
   */
  async getBytes(key: string, maxBytes = DEFAULT_MAX_BYTES): Promise<Uint8Array | undefined> {
    try {
      if (!isRealDirectory(this.dir)) return undefined;
      return readRegularBytes(this.bytesFile(key), maxBytes);
    } catch {
      return undefined;
    }
  }

  async putBytes(key: string, bytes: Uint8Array): Promise<void> {
    if (!isRealDirectory(this.dir)) mkdirSync(this.dir, { recursive: true });
    await writeFileAtomic(this.bytesFile(key), bytes, { durable: false });
  }

  private bytesFile(key: string): string {
    return path.join(this.dir, `${createHash('sha256').update(key).digest('hex')}.bin`);
  }

  /** The key's digest; `keep`: remembered for the put that follows a lookup (which forgets it). */
  private digest(key: string, keep = false): string {
    const known = this.digests.get(key);
    if (known !== undefined) {
      if (!keep) this.digests.delete(key);
      return known;
    }
    const digest = createHash('sha256').update(key).digest('hex');
    if (keep && key.length <= DIGEST_KEY_MAX) {
      if (this.digests.size >= DIGESTS_KEPT) this.digests.delete(this.digests.keys().next().value!);
      this.digests.set(key, digest);
    }
    return digest;
  }

  /** Bring the index up to date with the log: start over when it is another log, read what was appended. */
  private refresh(): void {
    this.seen = -1;
    const stat = lstatSync(this.log, { throwIfNoEntry: false });
    if (!stat?.isFile()) {
      this.forget();
      return;
    }
    this.seen = stat.size;
    // Shorter than what was read: truncated, or removed and made again.
    if (`${stat.dev}:${stat.ino}` !== this.inode || stat.size < this.scanned) this.forget();
    if (stat.size > this.scanned && !this.full()) this.readTail(stat.size);
  }

  private forget(): void {
    this.index.clear();
    this.inode = '';
    this.first = undefined;
    this.scanned = 0;
    this.endsLine = false;
    this.skipping = false;
    this.records = 0;
    this.lines = 0;
    this.counted = false;
    this.closeAppender();
  }

  /** Is the log full: read to LOG_MAX, or to RECORDS_MAX records or LINES_MAX lines? (Then new entries get files.) */
  private full(): boolean {
    return this.counted || this.scanned >= LOG_MAX;
  }

  /** Close the append descriptor (the log it names is gone, replaced or another one). */
  private closeAppender(): void {
    const appender = this.appender;
    this.appender = undefined;
    if (appender) closeQuietly(appender.fd);
  }

  /**
   * Is the log at its path, as `refresh` just saw it, the file this process appends through,
   * read to its end, and ending with a newline (so nothing needs to go before the next record)?
   */
  private appending(): boolean {
    return this.appender !== undefined && this.appender.inode === this.inode && this.seen === this.scanned && this.endsLine && this.scanned > 0 && !this.full();
  }

  /** Is `fd` the log the index describes? (Its first line was read when the index started.) */
  private same(fd: number, inode: string): boolean {
    return inode === this.inode && this.first !== undefined && firstLine(fd) === this.first;
  }

  /** Index the whole lines appended since the last read, up to `size` (a line still being written waits). */
  private readTail(size: number): void {
    const { fd, inode } = openRegularSized(this.log, O_RDONLY);
    try {
      if (!this.same(fd, inode)) {
        this.forget();
        this.inode = inode;
        this.first = firstLine(fd);
      }
      const end = Math.min(size, LOG_MAX);
      let stopped = false;
      let carry = Buffer.alloc(0);
      let offset = this.scanned;
      while (offset + carry.length < end) {
        const chunk = Buffer.allocUnsafe(Math.min(CHUNK, end - offset - carry.length));
        const read = readSync(fd, chunk, 0, chunk.length, offset + carry.length);
        if (read === 0) break;
        const bytes = carry.length ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
        let start = 0;
        if (this.skipping) {
          // The rest of a line longer than any record: passed over to its end, none of it read as lines.
          const newline = bytes.indexOf(10);
          if (newline < 0) {
            offset += bytes.length;
            continue;
          }
          start = newline + 1;
          this.skipping = false;
        }
        for (let newline = bytes.indexOf(10, start); newline >= 0; newline = bytes.indexOf(10, start)) {
          this.indexLine(bytes, start, newline, offset + start);
          start = newline + 1;
          this.lines++;
        }
        offset += start;
        // So many records, or lines, that the rest would cost seconds of the event loop (a log of
        // tiny or empty lines, written to hurt): the log is full, as past LOG_MAX.
        if (this.records >= RECORDS_MAX || this.lines >= LINES_MAX) {
          stopped = true;
          break;
        }
        // A line longer than any record is skipped whole, never buffered without bound.
        carry = bytes.length - start < SPAN ? bytes.subarray(start) : Buffer.alloc(0);
        if (carry.length === 0 && bytes.length > start) {
          offset += bytes.length - start;
          this.skipping = true;
        }
      }
      // A record that crosses the cap can never be indexed: the log is full.
      this.scanned = end === LOG_MAX && offset + carry.length >= LOG_MAX ? LOG_MAX : offset;
      this.counted = stopped;
      this.endsLine = this.scanned > 0 && lastByteAt(fd, this.scanned - 1) === 10;
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
    this.records++;
  }

  /** The record at packed position `at`, when it is still in this log, parses and belongs to `digest`. */
  private record(at: number, digest: string): LogRecord | undefined {
    const offset = Math.floor(at / SPAN);
    const length = at % SPAN;
    let opened: { fd: number; inode: string };
    try {
      opened = openRegularSized(this.log, O_RDONLY);
    } catch {
      return undefined;
    }
    const { fd, inode } = opened;
    try {
      if (!this.same(fd, inode)) {
        this.forget();
        return undefined;
      }
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
   * Append one record: one write, after a newline when a torn record ends the log, and after the
   * log's first line when it makes the log. False when the log cannot be used (something other
   * than a regular file where it belongs, no permission, …): the entry then gets a file.
   */
  private append(digest: string, line: string): boolean {
    if (this.appending()) {
      const { fd, inode } = this.appender!;
      try {
        const bytes = Buffer.from(line);
        writeAll(fd, bytes);
        this.indexOwn(fd, inode, this.scanned, bytes.length, 0, digest);
        return true;
      } catch {
        this.closeAppender();
        return false;
      }
    }
    this.closeAppender();
    let opened: { fd: number; size: number; inode: string };
    try {
      opened = openRegularSized(this.log, O_RDWR | O_APPEND | O_CREAT);
    } catch {
      return false;
    }
    const { fd, size, inode } = opened;
    try {
      let lead = '';
      if (size === 0) lead = `{"log":"pipeline answer cache","id":"${randomBytes(8).toString('hex')}"}\n`;
      else {
        const last = lastByteAt(fd, size - 1);
        if (last !== undefined && last !== 10) lead = '\n';
      }
      const bytes = Buffer.from(`${lead}${line}`);
      // Past the part of the log that is read (the log is longer than the index has read: a torn
      // line at its end), no reader would find the record: the entry gets a file.
      if (size + bytes.length > LOG_MAX) {
        closeSync(fd);
        return false;
      }
      writeAll(fd, bytes);
      // Kept only when this log is the one the index describes: then the next put can append at once.
      if (this.indexOwn(fd, inode, size, bytes.length, Buffer.byteLength(lead), digest)) {
        this.appender = { fd, inode };
        return true;
      }
    } catch {
      closeSync(fd);
      return false;
    }
    closeSync(fd);
    return true;
  }

  /** Close what this cache holds open (the append descriptor). It stays usable: the next put opens again. */
  close(): void {
    this.closeAppender();
  }

  /**
   * Index the record this process just appended at `before` without reading it back: only when
   * the index had read this log to its end, and the log is now exactly that plus what was written
   * (nothing else appended before or after it). Otherwise the next refresh reads it, as any other.
   */
  private indexOwn(fd: number, inode: string, before: number, written: number, lead: number, digest: string): boolean {
    const length = written - lead - 1;
    if (inode !== this.inode || before !== this.scanned || before === 0 || before + written > LOG_MAX || length >= SPAN) return false;
    try {
      // Another log of the same size on the same inode (emptied in place and written again) is
      // told by its first line: then the next refresh reads it from the start.
      if (fstatSync(fd).size !== before + written || !this.same(fd, inode)) return false;
    } catch {
      return false;
    }
    this.index.set(digest.slice(0, PREFIX), (before + lead) * SPAN + length);
    this.scanned = before + written;
    this.endsLine = true; // (a record is written with its newline)
    this.skipping = false; // (and one after a long line, after a newline that ends it)
    // Counted as a reader counts it: the writer's log is full no later than the next reader's
    // index is, so it never appends a record that reader would not read.
    this.records++;
    this.lines += lead > 0 ? 2 : 1;
    if (this.records >= RECORDS_MAX || this.lines >= LINES_MAX) this.counted = true;
    return true;
  }
}

/** The log's first line (at most FIRST_LINE_MAX bytes of it). */
function firstLine(fd: number): string {
  const buffer = Buffer.alloc(FIRST_LINE_MAX);
  const read = readSync(fd, buffer, 0, FIRST_LINE_MAX, 0);
  const newline = buffer.subarray(0, read).indexOf(10);
  return buffer.toString('latin1', 0, newline >= 0 ? newline : read);
}

function removeQuietly(file: string): boolean {
  try {
    // Usually there is nothing to remove: a failed stat is cheaper than a failed unlink.
    if (!lstatSync(file, { throwIfNoEntry: false })) return true;
    unlinkSync(file);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}
