/**
 * A cache of each proposal file's status (and which of a few declared fields it has, e.g. the
 * promotion stamp), validated against the file's (mtime, size, inode, ctime) on every use, so
 * `status` and `list` cost one stat per proposal instead of one read and parse. Any change to a
 * file — by the engine (a rename: new inode) or by hand — is seen and the file read again; an
 * edit in place whose mtime was put back (`touch -r`, `utimes`) still moves the ctime, which no
 * user can set. The cache is never required for correctness: delete it and it is rebuilt.
 *
 * A signature is trusted only once it is old enough (git's "racy" entries): a file system keeps
 * mtimes in steps (a clock tick on ext4, a second on some, two on FAT), and a file replaced twice
 * within one step can come back with the same size and, since a rename frees an inode for the
 * next temp file, the same inode number — the same signature over another status. An entry whose
 * last change (the later of mtime and ctime) is within RACY_MS of the start of the scan that
 * recorded it is read again each time; it is
 * trusted once a later scan has recorded it (the cache is rewritten for that when one settles).
 * (A file renamed into place carries the mtime of its write, a little older than the rename: the
 * replaced inode stays linked until then, so the new file never has its number.)
 *
 * Kept lean for 100,000 files: the directory listing and the cache are both sorted by id and
 * merged, with no per-entry objects. The listing itself is skipped when the directory has not
 * changed since a scan that recorded it, by the same rule (git's untracked cache does the same):
 * a name added, removed or renamed in a directory moves its mtime and ctime, so an unchanged
 * directory whose last change had settled before that scan holds the names the cache holds.
 *
 * And in bounded memory: the cache is read and written a few KB at a time (an unchanged line is
 * copied byte for byte), the ids are packed bytes, the result typed arrays, new lines bytes (in a
 * temp file past 1 MB). A scan holds next to nothing per proposal on the JavaScript heap and
 * 31–75 bytes outside it (the id; the result; the stat worker's numbers; where a line comes from,
 * once one changed), and little survives a collection of the young generation — which V8 grows
 * with what survives: whole-store queries at 100,000 peaked at 134–160 MB, now 77–80 (55 at
 * 1,000).
 */
import { closeSync, constants, type Dir, lstatSync, opendirSync, openSync, readSync, type Stats, statfsSync } from 'node:fs';
import path from 'node:path';
import { isUlid } from '../util/ids.js';
import { hasPath } from '../util/json-path.js';
import { install, NotRegularFile, tempName, unlinkQuietly, writeAll } from '../util/atomic-write.js';
import { cacheDirUsable, DOCUMENT_MAX_BYTES, makeCacheDir, openRegularSized, readRegular, readRegularStat, TooLarge } from './files.js';
import { PackedIds, statFiles, type FileStat } from './parallel-stat.js';
import { wrongId } from './types.js';

const FORMAT = 'pipeline-index 5';
/** How close to a scan's start an mtime is too close to trust (see above): FAT's two-second steps. */
const RACY_MS = 2000;

/** For tests: how many proposal files scans have read. */
export const scanReads = { count: 0 };
/** For tests: how many scans took the directory's names from the cache instead of listing it. */
export const directoryListingsSkipped = { count: 0 };
const FILE_NAME = /^[0-7][0-9A-HJKMNP-TV-Z]{25}\.json$/;

/**
 * What a scan found, in id order, held compactly: 100,000 entries are a few typed arrays and one
 * string of ids, not 300,000 small objects (which a collector keeps, and copies while they are
 * young: the young generation grew to its limit, a scan of 100,000 peaked at 130 MB).
 */
export interface ProposalScan {
  readonly length: number;
  id(i: number): string;
  /** null when the file is malformed. */
  status(i: number): string | null;
  /** Bit b set when the file has marked field b. */
  marks(i: number): number;
}

const EMPTY_SCAN: ProposalScan = { length: 0, id: () => '', status: () => null, marks: () => 0 };

/** Parse a proposal file just enough for the index: its status (null when malformed) and marks. */
export function parseHead(text: string, markFields: readonly string[], id?: string): { status: string | null; marks: number } {
  try {
    const value = JSON.parse(text) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return { status: null, marks: 0 };
    const record = value as Record<string, unknown>;
    if (id !== undefined && wrongId(id, record)) return { status: null, marks: 0 };
    let marks = 0;
    markFields.forEach((field, bit) => {
      if (hasPath(record, field)) marks |= 1 << bit;
    });
    return { status: typeof record['status'] === 'string' ? record['status'] : null, marks };
  } catch {
    return { status: null, marks: 0 };
  }
}

/**
 * The statuses a listing that follows the scan reads every entry of, keeping each only if the
 * file's own status is one of them (a listing by status, with no mark to leave out): an indexed
 * entry of such a status is then passed on without a stat — a file changed since is read by the
 * listing anyway. Entries of other statuses, and racy ones, are checked as always, so none that
 * became wanted is missed and none is settled unseen.
 *
 * The scan hands the listing no file it read: until 2026-12-07 it kept up to 10,000 of them
 * (text and parsed object) so that a first listing read each file once, and the parsed objects
 * kept alive through the scan came to cost the young generation more than reading them again
 * (docs/performance.md, "2026-12-07, late evening").
 */
export type ReadsListed = (status: string) => boolean;

/**
 * Does a trusted cache line record a status (not a malformed file) that `wanted` accepts? A racy
 * line (its file written within RACY_MS of the scan that recorded it) is checked as always: a scan
 * that rewrites the cache must not carry it on as settled without a look at its file.
 */
function listedAsIndexed(line: string, wanted: (status: string) => boolean, trustedBefore: number): boolean {
  const status = line.slice(27, line.indexOf('\t', 27));
  if (status === '' || !wanted(status)) return false;
  // id, status, marks, then the signature: mtime, size, inode, ctime.
  const fields = line.split('\t');
  return Math.max(Number(fields[3]), Number(fields[6])) < trustedBefore;
}

/**
 * How much of the cache is read (and written) at a time. Small: the chunk being read is alive at
 * every collection of the young generation, which grows with what survives them (64 KB chunks
 * peaked 3 MB higher at 100,000 proposals, for no time the bench could see).
 */
const CHUNK = 1 << 13;
let chunkBytes = CHUNK;

/**
 * For tests: read and write the cache `bytes` at a time (every line across chunks), and keep at
 * most `freshBytes` of new lines in memory (the rest in a file).
 */
export function setCacheChunk(bytes = CHUNK, freshBytes = FRESH_IN_MEMORY): void {
  chunkBytes = bytes;
  freshInMemory = freshBytes;
}
const HIGH_BYTES = /[^\x00-\x7f]/;
/** The longest cache line read (a proposal whose status is longer is read from its file each time). */
const LONGEST_LINE = 1 << 24;

/**
 * The lines of the cache file from `offset` on, in order, a chunk at a time: the whole cache is
 * never in memory (at 100,000 proposals it is 9 MB, and a scan's peak was that twice over, the
 * bytes and their text). Each line comes with where its bytes are, so that a line that did not
 * change is copied into the next cache byte for byte. A chunk is decoded as latin1 — a character
 * per byte, so positions are offsets — and a line with bytes over 127 (a status in another
 * alphabet) is decoded again as UTF-8.
 */
class CacheLines {
  /** The line (no newline), its first byte's offset in the file and its length in bytes. */
  line = '';
  start = 0;
  bytes = 0;
  /** The text read and not yet handed out is chunk[at…]; the file's next byte is at `position`. */
  private chunk = '';
  private at = 0;
  /**
   * A line longer than a chunk, so far: its pieces (each searched for a newline once, and joined
   * once — a 16 MB line costs what reading it costs) and where it starts.
   */
  private pieces: string[] = [];
  private piecesStart = 0;
  private high = false;
  private ended = false;
  /** It ended at a line too long to be one a scan wrote: what follows is not known. */
  damaged = false;
  constructor(
    private readonly fd: number,
    private position: number,
    private readonly buffer: Buffer,
  ) {}
  next(): boolean {
    for (;;) {
      const newline = this.chunk.indexOf('\n', this.at);
      if (newline >= 0) return this.take(newline, newline + 1);
      if (this.ended) return (this.at < this.chunk.length || this.pieces.length > 0) && this.take(this.chunk.length, this.chunk.length);
      if (this.at < this.chunk.length) {
        if (this.pieces.length === 0) this.piecesStart = this.position - this.chunk.length + this.at;
        this.pieces.push(this.chunk.slice(this.at));
        // No scan writes a line this long (a damaged or sparse file does): the cache ends here,
        // and what it would have said is read from the files.
        if (this.position - this.piecesStart > LONGEST_LINE) {
          this.pieces = [];
          this.chunk = '';
          this.ended = true;
          this.damaged = true;
          return false;
        }
      }
      this.fill();
    }
  }
  private take(end: number, next: number): true {
    let raw = this.chunk.slice(this.at, end);
    this.start = this.position - this.chunk.length + this.at;
    if (this.pieces.length > 0) {
      raw = this.pieces.join('') + raw;
      this.start = this.piecesStart;
      this.pieces = [];
    }
    this.bytes = raw.length;
    this.line = this.high && HIGH_BYTES.test(raw) ? Buffer.from(raw, 'latin1').toString('utf8') : raw;
    this.at = next;
    return true;
  }
  private fill(): void {
    const read = readSync(this.fd, this.buffer, 0, this.buffer.length, this.position);
    this.chunk = '';
    this.at = 0;
    if (read === 0) {
      this.ended = true;
      return;
    }
    this.chunk = this.buffer.toString('latin1', 0, read);
    this.position += read;
    this.high ||= HIGH_BYTES.test(this.chunk);
  }
}

/**
 * The cache file, open for the whole scan (a cache another scan puts in place meanwhile is another
 * file; this one stays whole), with its header: the start of the scan that wrote it (ms since the
 * epoch) and the signature of the directory that scan listed when it could vouch for it (see
 * `directorySignature`), with the number of lines it wrote (-1 without).
 */
class CacheFile {
  private readonly buffer = Buffer.allocUnsafe(chunkBytes);
  private constructor(
    readonly fd: number,
    /** Where the lines start, and how many bytes they take. */
    readonly body: number,
    readonly bodyBytes: number,
    readonly scannedAt: number,
    readonly directory: string,
    readonly entries: number,
  ) {}
  /** undefined: no cache, or not one this scan can use (another format, other fields). */
  static open(file: string, fields: string): CacheFile | undefined {
    let fd: number;
    let size: number;
    if (!cacheDirUsable(path.dirname(file))) return undefined;
    try {
      ({ fd, size } = openRegularSized(file, constants.O_RDONLY));
    } catch {
      return undefined;
    }
    try {
      // The header: its fields' names make it as long as they are (64 KB is far past any).
      const buffer = Buffer.allocUnsafe(1 << 16);
      const read = readSync(fd, buffer, 0, buffer.length, 0);
      const newline = buffer.subarray(0, read).indexOf(10);
      const first = buffer.toString('utf8', 0, newline < 0 ? read : newline);
      // The header names the marked fields (another set means another cache), when its scan began
      // and, optionally, the directory's signature and how many lines follow (a cache cut short,
      // say by a crash, is not taken for the whole directory).
      const header = `${FORMAT}\t${fields}\t`;
      const rest = first.startsWith(header) ? first.slice(header.length) : '';
      const match = /^(\d{1,15})(?:\t(-?\d+(?:\.\d+)?:-?\d+(?:\.\d+)?:\d+:\d+)\t(\d{1,9}))?$/.exec(rest);
      if (match && (newline >= 0 || read < buffer.length)) {
        const entries = match[3] === undefined ? -1 : Number(match[3]);
        const body = newline < 0 ? read : newline + 1;
        return new CacheFile(fd, body, Math.max(0, size - body), Number(match[1]), match[2] ?? '', entries);
      }
    } catch {
      // unreadable: no cache
    }
    closeSync(fd);
    return undefined;
  }
  lines(): CacheLines {
    return new CacheLines(this.fd, this.body, this.buffer);
  }
  close(): void {
    closeSync(this.fd);
  }
}

/**
 * File systems whose times come from this machine's clock (Linux `statfs` magic numbers): ext2–4,
 * XFS, Btrfs, tmpfs, ramfs, F2FS, ZFS, overlayfs. Only there is a directory's time comparable with
 * `Date.now()`; on a network file system the server's clock sets it (and an attribute cache may
 * serve an old one), so a directory there is listed on every scan.
 */
const LOCAL_FILE_SYSTEMS = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x858458f6, 0xf2f52010, 0x2fc12fc1, 0x794c7630]);

/** For tests: whether the file system of a directory counts as local (see LOCAL_FILE_SYSTEMS). */
export const localFileSystem = {
  test(dir: string): boolean {
    if (process.platform !== 'linux') return false;
    try {
      return LOCAL_FILE_SYSTEMS.has(statfsSync(dir).type);
    } catch {
      return false;
    }
  },
};

/** A directory's signature: what any change to its names moves (mtime, ctime), and which directory it is. */
function directorySignature(stat: { mtimeMs: number; ctimeMs: number; ino: number; size: number }): string {
  return `${stat.mtimeMs}:${stat.ctimeMs}:${stat.ino}:${stat.size}`;
}

/**
 * The ids of the cached lines, when they are what a scan writes: as many lines as its header
 * says, one per id, sorted, each starting with a proposal id (a hand-edited or broken cache means
 * the directory is listed).
 */
function cachedIds(cache: CacheFile): PackedIds | undefined {
  // A line takes 28 bytes at least: a count the file cannot hold is a lie, not room to make.
  if (cache.entries < 0 || cache.entries * 28 > cache.bodyBytes + 1) return undefined;
  const ids = PackedIds.writer(cache.entries);
  let last = '';
  let count = 0;
  const lines = cache.lines();
  for (; lines.next(); count++) {
    const id = lines.line.slice(0, 26);
    if (count === cache.entries || lines.line.charCodeAt(26) !== 9 || lines.line.length < 28 || !isUlid(id) || id <= last) return undefined;
    ids.push(id);
    last = id;
  }
  return count === cache.entries && !lines.damaged ? ids.done() : undefined;
}

/**
 * The directory's proposal files' ids, sorted. Read a batch of names at a time into bytes and
 * sorted there: an array of 100,000 names, kept through a sort, was what grew a scan's young
 * generation to its limit after any change to the directory.
 */
function listedIds(proposalsDir: string, expected: number): PackedIds | undefined {
  // Shared (the stat worker reads them) and sized for what the directory is expected to hold —
  // pages never written are never resident — up to 4 million (a guess from a damaged cache or an
  // odd directory size must not ask for gigabytes; past it the bytes grow as they fill).
  const ids = PackedIds.writer(Math.min(1 << 22, Math.max(1024, Math.ceil(expected) || 0)), { grow: true });
  let listing: Dir;
  try {
    listing = opendirSync(proposalsDir, { bufferSize: 1024 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    for (let entry = listing.readSync(); entry !== null; entry = listing.readSync()) if (FILE_NAME.test(entry.name)) ids.push(entry.name.slice(0, 26));
  } finally {
    listing.closeSync();
  }
  return ids.sorted();
}

/**
 * A scan's result as it is built: per entry, which id it is (an index into the ids scanned: a
 * file gone meanwhile has none), its status (an index into `statuses`, 0 for a malformed file) and
 * marks; and per entry, where the line the cache gets for it comes from — the bytes of a line of
 * the old cache (at offset `lineAt` ≥ 0, `lineBytes` long), a new line (`lineAt` -1 - place in
 * `fresh`, `lineBytes` long with its newline), or none (a malformed file: NO_LINE).
 */
class ScanBuilder implements ProposalScan {
  length = 0;
  /** Undefined while every entry so far is the id at its own position (nothing gone). */
  private index: Int32Array | undefined;
  private readonly codes: Int32Array;
  private readonly markBits: Uint8Array | Uint16Array | Int32Array;
  /**
   * The first `linear` entries' lines are the old cache's first lines, as they were: its bytes
   * [linearFrom, linearEnd) (the last newline left out). Only from the first entry that is not
   * are lines placed one by one, in `lineAt` and `lineBytes` (a scan that changes nothing needs
   * neither).
   */
  linear = 0;
  linearEnd: number;
  lineAt: Float64Array | undefined;
  lineBytes: Int32Array | undefined;
  readonly fresh: FreshLines;
  private readonly statuses: (string | null)[] = [null];
  private readonly codeOf = new Map<string, number>();
  constructor(
    private readonly ids: PackedIds,
    private readonly capacity: number,
    markFields: number,
    readonly linearFrom: number,
    cacheFile: string,
  ) {
    this.fresh = new FreshLines(cacheFile);
    this.linearEnd = linearFrom - 1;
    this.codes = new Int32Array(capacity);
    this.markBits = markFields <= 8 ? new Uint8Array(capacity) : markFields <= 16 ? new Uint16Array(capacity) : new Int32Array(capacity);
  }
  /** Entry `n` is id `i`, its cache line `line` (null: a malformed file). */
  add(i: number, line: string | null, lineAt: number, lineBytes = 0): void {
    const n = this.length++;
    if (this.index) this.index[n] = i;
    else if (i !== n) {
      this.index = new Int32Array(this.capacity);
      for (let k = 0; k < n; k++) this.index[k] = k;
      this.index[n] = i;
    }
    // id, status, marks, signature: the status found among those seen without cutting it out.
    let code = 0;
    let marksAt = 28;
    if (line !== null) {
      for (let c = 1; c < this.statuses.length && c <= 16; c++) {
        const known = this.statuses[c]!;
        if (line.charCodeAt(27 + known.length) === 9 && line.startsWith(known, 27)) {
          code = c;
          marksAt = 28 + known.length;
          break;
        }
      }
      if (code === 0 && line.charCodeAt(27) !== 9) {
        const end = line.indexOf('\t', 27);
        const status = line.slice(27, end);
        marksAt = end + 1;
        code = this.codeOf.get(status) ?? this.statuses.length;
        if (code === this.statuses.length) {
          // A copy: a slice would keep the whole text it was cut from (the old cache) alive.
          const own = Buffer.from(status).toString();
          this.codeOf.set(own, code);
          this.statuses.push(own);
        }
      }
    }
    this.codes[n] = code;
    this.markBits[n] = line === null ? 0 : digitsAt(line, marksAt);
    if (!this.lineAt && lineAt >= 0 && lineAt === this.linearEnd + 1) {
      this.linear++;
      this.linearEnd = lineAt + lineBytes;
      return;
    }
    this.lineAt ??= new Float64Array(this.capacity);
    this.lineBytes ??= new Int32Array(this.capacity);
    this.lineAt[n] = lineAt;
    this.lineBytes[n] = lineBytes;
  }
  id(n: number): string {
    return this.ids.at(this.index ? this.index[n]! : n);
  }
  status(n: number): string | null {
    return this.statuses[this.codes[n]!] ?? null;
  }
  marks(n: number): number {
    return this.markBits[n]!;
  }
  /** The lines are written: only the entries are kept. */
  written(): void {
    this.fresh.discard();
    this.lineAt = undefined;
    this.lineBytes = undefined;
  }
}

const NO_LINE = Number.NEGATIVE_INFINITY;

/**
 * The decimal number written in `line` from `at` to the next tab (or its end), read in place: the
 * marks, negative when the 32nd field is marked.
 */
function digitsAt(line: string, at: number): number {
  const negative = line.charCodeAt(at) === 45;
  if (negative) at++;
  let value = 0;
  for (let c = line.charCodeAt(at); c >= 48 && c <= 57; c = line.charCodeAt(++at)) value = value * 10 + (c - 48);
  return negative ? -value : value;
}

/**
 * Does a cache line end with this file's signature — `\t` mtime `\t` size `\t` inode `\t` ctime —
 * as a scan writes it? The whole numbers are compared digit by digit in place, the times as
 * their text: nothing is built for a line that matches but two short strings. (Exported for tests.)
 */
export function endsWithSignature(line: string, stat: { mtimeMs: number; size: number; ino: number; ctimeMs: number }): boolean {
  const ctime = String(stat.ctimeMs);
  const ctimeAt = line.length - ctime.length;
  if (line.charCodeAt(ctimeAt - 1) !== 9 || !line.endsWith(ctime)) return false;
  const inoAt = line.lastIndexOf('\t', ctimeAt - 2) + 1;
  if (!wholeNumberAt(line, inoAt, ctimeAt - 1, stat.ino)) return false;
  const sizeAt = line.lastIndexOf('\t', inoAt - 2) + 1;
  if (!wholeNumberAt(line, sizeAt, inoAt - 1, stat.size)) return false;
  const mtime = String(stat.mtimeMs);
  const mtimeAt = sizeAt - 1 - mtime.length;
  return mtimeAt > 27 && line.charCodeAt(mtimeAt - 1) === 9 && line.startsWith(mtime, mtimeAt);
}

/** Is line[from, to) exactly what String(value) writes? */
function wholeNumberAt(line: string, from: number, to: number, value: number): boolean {
  if (from <= 0 || to <= from) return false;
  if (!Number.isSafeInteger(value) || value < 0 || to - from > 16) {
    // Not a plain run of digits (an inode past 2^53 is written in exponent form): as text.
    const text = String(value);
    return to - from === text.length && line.startsWith(text, from);
  }
  if (to - from > 1 && line.charCodeAt(from) === 48) return false; // a leading zero: not how it is written
  let read = 0;
  for (let at = from; at < to; at++) {
    const c = line.charCodeAt(at);
    if (c < 48 || c > 57) return false;
    read = read * 10 + (c - 48);
  }
  return read === value;
}

/** New lines kept in memory up to this many bytes; past it, in a file beside the cache. */
const FRESH_IN_MEMORY = 1 << 20;
let freshInMemory = FRESH_IN_MEMORY;
/** A place at or past this is an offset in that file plus it. */
const SPILLED = 2 ** 52;

/**
 * New lines for the cache, kept as bytes outside the JavaScript heap until it is written, and past
 * FRESH_IN_MEMORY in a temp file beside it: a first scan of 100,000 files makes 100,000 of them
 * (9 MB; as strings they outlived the young generation — 10 MB in the old one, and the young one
 * grown to its limit). A place is block · 2³² + offset in memory, SPILLED + offset in the file.
 */
class FreshLines {
  private readonly blocks: Buffer[] = [];
  private used = 0;
  private inMemory = 0;
  private spill: { fd: number; file: string; written: number; buffer: Buffer; pending: number } | undefined;
  /**
   * The file could not be made or written (a read-only store, a full disk): the lines are not
   * kept, and the cache is not written — a scan never fails for its cache.
   */
  broken = false;
  constructor(private readonly beside: string) {}
  /** Keep `line` and a newline; returns where and how many bytes. */
  add(line: string): { place: number; bytes: number } {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const most = line.length * 3 + 1;
    if (this.broken) return { place: 0, bytes: 0 };
    if (this.inMemory >= freshInMemory) {
      try {
        return this.addToFile(line, most);
      } catch {
        this.discard();
        this.broken = true;
        return { place: 0, bytes: 0 };
      }
    }
    let block = this.blocks[this.blocks.length - 1];
    if (!block || this.used + most > block.length) {
      block = Buffer.allocUnsafeSlow(Math.max(1 << 18, most));
      this.blocks.push(block);
      this.used = 0;
    }
    const at = this.used;
    const bytes = block.write(line, at) + 1;
    block[at + bytes - 1] = 10;
    this.used += bytes;
    this.inMemory += bytes;
    return { place: (this.blocks.length - 1) * 2 ** 32 + at, bytes };
  }
  private addToFile(line: string, most: number): { place: number; bytes: number } {
    if (!this.spill) {
      makeCacheDir(path.dirname(this.beside));
      const file = tempName(this.beside);
      this.spill = { fd: openSync(file, 'wx+', 0o600), file, written: 0, buffer: Buffer.allocUnsafe(chunkBytes), pending: 0 };
    }
    const spill = this.spill;
    if (spill.pending + most > spill.buffer.length) this.flushFile();
    if (most > spill.buffer.length) {
      const bytes = Buffer.from(`${line}\n`);
      writeAll(spill.fd, bytes);
      spill.written += bytes.length;
      return { place: SPILLED + spill.written - bytes.length, bytes: bytes.length };
    }
    const place = SPILLED + spill.written + spill.pending;
    const bytes = spill.buffer.write(line, spill.pending) + 1;
    spill.buffer[spill.pending + bytes - 1] = 10;
    spill.pending += bytes;
    return { place, bytes };
  }
  private flushFile(): void {
    const spill = this.spill!;
    writeAll(spill.fd, spill.buffer.subarray(0, spill.pending));
    spill.written += spill.pending;
    spill.pending = 0;
  }
  /** Copy `length` bytes kept from `place` on (lines added one after another) to `out`. */
  copyTo(out: BlockWriter, place: number, length: number): void {
    if (place >= SPILLED) {
      if (this.spill!.pending > 0) this.flushFile();
      out.copy(this.spill!.fd, place - SPILLED, length);
      return;
    }
    const at = place % 2 ** 32;
    out.bytes(this.blocks[Math.floor(place / 2 ** 32)]!.subarray(at, at + length));
  }
  /** Let go of every line (and the file). */
  discard(): void {
    this.blocks.length = 0;
    if (!this.spill) return;
    closeSync(this.spill.fd);
    unlinkQuietly(this.spill.file);
    this.spill = undefined;
  }
}

const NEWLINE = Buffer.from('\n');

/** A file written through a buffer: text, and byte ranges copied from another file. */
class BlockWriter {
  private readonly buffer = Buffer.allocUnsafe(chunkBytes);
  private used = 0;
  constructor(private readonly fd: number) {}
  text(text: string): void {
    this.bytes(Buffer.from(text));
  }
  bytes(bytes: Uint8Array): void {
    if (this.used + bytes.length > this.buffer.length) this.flush();
    if (bytes.length > this.buffer.length) writeAll(this.fd, bytes);
    else {
      this.buffer.set(bytes, this.used);
      this.used += bytes.length;
    }
  }
  copy(from: number, position: number, length: number): void {
    while (length > 0) {
      if (this.used === this.buffer.length) this.flush();
      const read = readSync(from, this.buffer, this.used, Math.min(length, this.buffer.length - this.used), position);
      if (read <= 0) throw Object.assign(new Error('the old cache ended early'), { code: 'EIO' });
      this.used += read;
      position += read;
      length -= read;
    }
  }
  flush(): void {
    writeAll(this.fd, this.buffer.subarray(0, this.used));
    this.used = 0;
  }
}

/**
 * Write the cache: the header, then each entry's line — the old cache's bytes where it did not
 * change, a run of consecutive lines at a time — to a temp file put in place by a rename (not
 * synced: a cache lost in a crash is rebuilt).
 */
function writeCache(cacheFile: string, header: string, built: ScanBuilder, cache: CacheFile | undefined): void {
  makeCacheDir(path.dirname(cacheFile));
  const temp = tempName(cacheFile);
  const fd = openSync(temp, 'wx', 0o644);
  try {
    const out = new BlockWriter(fd);
    out.text(`${header}\n`);
    // Bytes still to copy, [runStart, runEnd): of the old cache (each line's newline but the
    // last's), or of the new lines (newlines and all).
    let run: 'none' | 'old' | 'new' = 'none';
    let runStart = 0;
    let runEnd = 0;
    const copyRun = () => {
      if (run === 'old') {
        out.copy(cache!.fd, runStart, runEnd - runStart);
        out.bytes(NEWLINE);
      } else if (run === 'new') built.fresh.copyTo(out, runStart, runEnd - runStart);
      run = 'none';
    };
    if (built.linear > 0) {
      run = 'old';
      runStart = built.linearFrom;
      runEnd = built.linearEnd;
    }
    for (let n = built.linear; n < built.length; n++) {
      const at = built.lineAt![n]!;
      const bytes = built.lineBytes![n]!;
      if (at === NO_LINE) continue;
      const kind = at >= 0 ? 'old' : 'new';
      const from = at >= 0 ? at : -1 - at;
      // The next line of the same source: the old cache's after a newline, a new one right after.
      if (run === kind && from === runEnd + (kind === 'old' ? 1 : 0)) {
        runEnd = from + bytes;
        continue;
      }
      copyRun();
      run = kind;
      runStart = from;
      runEnd = from + bytes;
    }
    copyRun();
    out.flush();
  } catch (error) {
    closeSync(fd);
    unlinkQuietly(temp);
    throw error;
  }
  closeSync(fd);
  install(temp, cacheFile);
}

/**
 * Bring the cache up to date with the proposals directory and return it. Files that changed
 * since the last scan are read again; the cache file is rewritten only when something changed.
 */
export async function scanProposals(proposalsDir: string, cacheFile: string, markFields: readonly string[], readsListed?: ReadsListed): Promise<ProposalScan> {
  // The directory's signature before its names are read, and the time then: a name added after
  // this moves its times, to a later step of the file system's clock when its last change was
  // over RACY_MS before it — however long the listing itself then takes.
  const lookedAt = Date.now();
  const directory = lstatSync(proposalsDir, { throwIfNoEntry: false });
  if (!directory) return EMPTY_SCAN;
  const cache = CacheFile.open(cacheFile, markFields.join(','));
  try {
    return await scanWith(cache, proposalsDir, cacheFile, markFields, readsListed, lookedAt, directory);
  } finally {
    cache?.close();
  }
}

/** The longest status an index line keeps whole (a state of a longer name could not be selected through the index: docs/design.md). */
const STATUS_KEPT = 1024;

/** What a cache line keeps of a file's stat: enough to tell whether it changed. */
const signatureOf = (stat: Stats): FileStat => ({ mtimeMs: stat.mtimeMs, size: stat.size, ino: stat.ino, ctimeMs: stat.ctimeMs });

/** The scan itself, with the cache (when there is one) held open for its whole length. */
async function scanWith(
  cache: CacheFile | undefined,
  proposalsDir: string,
  cacheFile: string,
  markFields: readonly string[],
  readsListed: ReadsListed | undefined,
  lookedAt: number,
  directory: Stats,
): Promise<ProposalScan> {
  const trustedBefore = (cache?.scannedAt ?? 0) - RACY_MS;
  const directoryChangedAt = Math.max(directory.mtimeMs, directory.ctimeMs);
  const signature = directory.isDirectory() && localFileSystem.test(proposalsDir) ? directorySignature(directory) : '';
  let ids = cache && signature !== '' && signature === cache.directory && directoryChangedAt < trustedBefore ? cachedIds(cache) : undefined;
  if (ids) directoryListingsSkipped.count++;
  else {
    // About as many as the cache has lines (a line is 80-odd bytes) or the directory's size allows
    // (ext4 gives a name of a proposal 40 bytes; others say less), whichever is more: room that is
    // never written is never resident, and the ids are not copied as they grow.
    ids = listedIds(proposalsDir, Math.max(cache ? cache.bodyBytes / 60 : 0, directory.size / 32));
    if (!ids) return EMPTY_SCAN;
  }
  // Before any stat: every file this scan sees was last written no later than it saw it.
  const scanStart = Date.now();
  // The directory's signature is recorded when the next scan can trust it: its last change had
  // settled when this scan looked at it, and every name it holds is in the cache (a link, FIFO or
  // directory named like a proposal is not: then the directory is listed each time, and reported).
  let recordDirectory = directoryChangedAt < lookedAt - RACY_MS ? signature : '';
  const out = new ScanBuilder(ids, ids.length, markFields.length, cache?.body ?? -1, cacheFile);
  try {
    let lines = 0;
    let changed = false;
    const cached = cache?.lines();
    let hasLine = cached?.next() ?? false;
    const prefix = `${proposalsDir}/`;
    // lstat (or the open of a file not in the cache): a link, FIFO or directory named like a proposal
    // is reported (malformed), never followed. Without a cache every file is read: no stats at all.
    const stats = statFiles(prefix, hasLine ? ids : [], '.json');
    /**
     * The cache line of `id` (at `i`), checked against its file and read again when it changed;
     * null: not a regular file (malformed); undefined: gone.
     */
    const check = (i: number, id: string, previous: string | undefined): string | null | undefined => {
      let stat: FileStat;
      let text: string | undefined;
      if (previous === undefined) {
        // Not in the cache (a new file; every file, the first time): it is read anyway, and its
        // fstat is the signature — no lstat before the open.
        try {
          const read = readRegularStat(`${prefix}${id}.json`, DOCUMENT_MAX_BYTES);
          text = read?.text;
          stat = read && signatureOf(read.stat);
        } catch (error) {
          // Too large: a file that does not parse, kept with its signature (read again only once it
          // changes). A link, FIFO or directory named like a proposal, or one this user may not read
          // (another may): malformed here, never kept.
          stat = error instanceof TooLarge ? signatureOf(error.stat) : null;
          text = '';
        }
      } else stat = stats.at(i);
      if (stat === undefined || stat === null) {
        if (previous !== undefined) changed = true;
        return stat;
      }
      const changedAt = Math.max(stat.mtimeMs, stat.ctimeMs);
      if (previous !== undefined && changedAt < trustedBefore && endsWithSignature(previous, stat)) return previous;
      if (text === undefined) {
        try {
          text = readRegular(`${prefix}${id}.json`, DOCUMENT_MAX_BYTES);
        } catch (error) {
          // One this user may not read (another may): malformed here, never kept.
          if (!(error instanceof TooLarge || error instanceof NotRegularFile)) {
            changed = true;
            return null;
          }
          text = ''; // too large, or replaced by something that is not a file meanwhile: malformed
        }
        if (text === undefined) {
          changed = true;
          return undefined; // removed meanwhile
        }
      }
      scanReads.count++;
      const head = parseHead(text, markFields, id);
      // A status with a tab or a newline is not a state of any machine; keep the line intact. Nor
      // is one of thousands of characters: kept cut (and marked cut), so no line outgrows what the
      // cache reads back as one.
      const status = (head.status ?? '').replace(/[\t\n\r]/g, ' ');
      const kept = status.length > STATUS_KEPT ? `${status.slice(0, STATUS_KEPT)}…` : status;
      const line = `${id}\t${kept}\t${head.marks}\t${stat.mtimeMs}\t${stat.size}\t${stat.ino}\t${stat.ctimeMs}`;
      // A racy entry read again to the same line changes nothing, unless this scan's record of it
      // would be trusted next time: then the cache is written again for that.
      if (line !== previous || changedAt < scanStart - RACY_MS) changed = true;
      return line;
    };
    try {
      for (let i = 0; i < ids.length; i++) {
        const id = ids.at(i);
        const claimed = stats.claim(i);
        if (claimed) await claimed;
        while (hasLine && !cached!.line.startsWith(id) && cached!.line.slice(0, 26) < id) {
          hasLine = cached!.next();
          changed = true; // a cached entry whose file is gone
        }
        let previous: string | undefined;
        let previousAt = 0;
        let previousBytes = 0;
        if (hasLine && cached!.line.startsWith(id)) {
          previous = cached!.line;
          previousAt = cached!.start;
          previousBytes = cached!.bytes;
          hasLine = cached!.next();
        }
        // A listing reads what it lists: an entry it wants by its indexed status needs no stat here.
        const line = previous !== undefined && readsListed && listedAsIndexed(previous, readsListed, trustedBefore) ? previous : check(i, id, previous);
        if (line === undefined) continue;
        if (line === null) {
          recordDirectory = '';
          out.add(i, null, NO_LINE);
          continue;
        }
        if (line === previous) out.add(i, line, previousAt, previousBytes);
        else {
          const { place, bytes } = out.fresh.add(line);
          out.add(i, line, -1 - place, bytes);
        }
        lines++;
      }
    } finally {
      stats.close();
    }
    for (; hasLine; hasLine = cached!.next()) if (cached!.line !== '') changed = true;
    if (cached?.damaged) changed = true;
    // A directory that settled since the cache was written is recorded, once: the next scan trusts it.
    if (recordDirectory !== '' && recordDirectory !== (cache?.directory ?? '')) changed = true;
    if (changed && !out.fresh.broken) {
      const header = `${FORMAT}\t${markFields.join(',')}\t${scanStart}${recordDirectory === '' ? '' : `\t${recordDirectory}\t${lines}`}`;
      try {
        writeCache(cacheFile, header, out, cache);
      } catch {
        // A cache that cannot be written (a read-only store) is only slower next time.
      }
    }
    return out;
  } finally {
    // The lines are written (or given up on): only the entries are kept.
    out.written();
  }
}
