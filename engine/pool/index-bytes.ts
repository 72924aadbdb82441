/**
 * The pool index as the cache keeps it: bytes, so that loading 100,000 rows is one read and a
 * few views of it. As JSON, parsing the 5.7 MB of numbers of 100,000 rows, decoding them and the
 * garbage of it were a third of a warm `pool top` (about 120 of 380 ms here).
 *
 * Layout (little-endian), every part starting at a multiple of 8 bytes:
 *
 *   "PIX4" | u32: the header's length | header: JSON (UTF-8) | the ids: count × 26 bytes (ASCII) |
 *   promoted, hits, misses: f64 × count each | stack, stackCount, files, filesCount, tasks,
 *   tasksCount: u32 each (the lists' lengths are in the header)
 *
 * The header holds what is not a column: the caller's `meta` (cursor, nonce, …), the row count,
 * the string table and the lists' lengths. What comes back from a cache is hostile: bytes that
 * are not exactly this layout (zeros in every padding byte), ids that are not ULIDs in ascending
 * order, or columns that are not well formed (`wellFormed`), are no index.
 */
import { type Columns, ID_WIDTH, wellFormed } from './columns.js';

const MAGIC = 'PIX4';
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const NUMBERS = ['promoted', 'hits', 'misses'] as const;
const LISTS = [
  ['stack', 'stackCount'],
  ['files', 'filesCount'],
  ['tasks', 'tasksCount'],
] as const;

interface Header {
  meta: Record<string, unknown>;
  count: number;
  strings: string[];
  /** The lengths of the stack, files and tasks lists. */
  lists: [number, number, number];
}

const align = (n: number) => Math.ceil(n / 8) * 8;

/** The bytes of a typed array, little-endian. */
function bytesOf(values: Float64Array | Uint32Array): Uint8Array {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  if (LITTLE_ENDIAN) return bytes;
  const copy = Buffer.from(bytes);
  return values instanceof Float64Array ? copy.swap64() : copy.swap32();
}

/** The columns and the caller's `meta` (JSON-able) as bytes. */
export function encodeIndex(meta: Record<string, unknown>, columns: Columns): Uint8Array {
  const header: Header = {
    meta,
    count: columns.count,
    strings: columns.strings,
    lists: [columns.stack.length, columns.files.length, columns.tasks.length],
  };
  const head = Buffer.from(JSON.stringify(header));
  const parts: Uint8Array[] = [Buffer.from(columns.ids, 'latin1')];
  for (const name of NUMBERS) parts.push(bytesOf(columns[name]));
  for (const [values, counts] of LISTS) parts.push(bytesOf(columns[values]), bytesOf(columns[counts]));
  let size = align(8 + head.length);
  for (const part of parts) size += align(part.length);
  const out = Buffer.alloc(size);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(head.length, 4);
  head.copy(out, 8);
  let at = align(8 + head.length);
  for (const part of parts) {
    out.set(part, at);
    at += align(part.length);
  }
  return out;
}

function isHeader(value: unknown): value is Header {
  const h = value as Partial<Header> | null;
  return (
    !!h &&
    typeof h === 'object' &&
    !!h.meta &&
    typeof h.meta === 'object' &&
    !Array.isArray(h.meta) &&
    Number.isSafeInteger(h.count) &&
    h.count! >= 0 &&
    Array.isArray(h.strings) &&
    h.strings.every((text) => typeof text === 'string') &&
    Array.isArray(h.lists) &&
    h.lists.length === 3 &&
    h.lists.every((length) => Number.isSafeInteger(length) && length >= 0)
  );
}

/** Crockford base-32, as ULIDs are written: which bytes may be in an id. */
const ULID_CHAR = new Uint8Array(256);
for (const char of '0123456789ABCDEFGHJKMNPQRSTVWXYZ') ULID_CHAR[char.charCodeAt(0)] = 1;

/**
 * Are the `count` ids at `at` ULIDs (first character 0–7), each after the one before? A row
 * whose id is not one would reach `store.read` and stop the command; ids out of order or twice
 * would make a lookup miss a row, so that a stale row could never be corrected or removed.
 */
function idsInOrder(bytes: Buffer, at: number, count: number): boolean {
  for (let row = 0; row < count; row++) {
    const start = at + row * ID_WIDTH;
    const first = bytes[start]!;
    if (first < 0x30 || first > 0x37) return false;
    let order = row === 0 ? 1 : 0; // compared with the id before: 1 after it, -1 before, 0 equal so far
    for (let i = start; i < start + ID_WIDTH; i++) {
      const byte = bytes[i]!;
      if (ULID_CHAR[byte] === 0) return false;
      if (order === 0) {
        const before = bytes[i - ID_WIDTH]!;
        if (byte !== before) order = byte > before ? 1 : -1;
      }
    }
    if (order !== 1) return false;
  }
  return true;
}

/** The caller's `meta` and the columns, or undefined when `bytes` are not a well-formed index. */
export function decodeIndex(bytes: Uint8Array): { meta: Record<string, unknown>; columns: Columns } | undefined {
  let buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < 8 || buffer.toString('latin1', 0, 4) !== MAGIC) return undefined;
  const headLength = buffer.readUInt32LE(4);
  if (8 + headLength > buffer.length) return undefined;
  let header: unknown;
  try {
    header = JSON.parse(buffer.toString('utf8', 8, 8 + headLength));
  } catch {
    return undefined;
  }
  if (!isHeader(header)) return undefined;
  const { count, lists } = header;
  // Every part must fit exactly before anything is made of it (a count from the cache is never
  // trusted with an allocation).
  const sizes = [count * ID_WIDTH, ...NUMBERS.map(() => count * 8), ...lists.flatMap((length) => [length * 4, count * 4])];
  const total = sizes.reduce((sum, size) => sum + align(size), align(8 + headLength));
  if (total !== buffer.length) return undefined;
  // Views need their parts at multiples of their element size in memory.
  if (buffer.byteOffset % 8 !== 0 || !LITTLE_ENDIAN) buffer = Buffer.from(buffer);
  // Every padding byte is a zero (the layout is held exactly, not just its length).
  let end = 8 + headLength;
  for (const size of [0, ...sizes]) {
    end += size;
    for (let i = end; i < align(end); i++) if (buffer[i] !== 0) return undefined;
    end = align(end);
  }
  let at = align(8 + headLength);
  if (!idsInOrder(buffer, at, count)) return undefined;
  const ids = buffer.toString('latin1', at, at + count * ID_WIDTH);
  at += align(count * ID_WIDTH);
  const next = <T>(size: number, make: (offset: number) => T): T => {
    const made = make(buffer.byteOffset + at);
    at += align(size);
    return made;
  };
  const float64 = () =>
    next(count * 8, (offset) => {
      if (!LITTLE_ENDIAN) buffer.subarray(at, at + count * 8).swap64();
      return new Float64Array(buffer.buffer, offset, count);
    });
  const uint32 = (length: number) =>
    next(length * 4, (offset) => {
      if (!LITTLE_ENDIAN) buffer.subarray(at, at + length * 4).swap32();
      return new Uint32Array(buffer.buffer, offset, length);
    });
  const promoted = float64();
  const hits = float64();
  const misses = float64();
  const stack = uint32(lists[0]);
  const stackCount = uint32(count);
  const files = uint32(lists[1]);
  const filesCount = uint32(count);
  const tasks = uint32(lists[2]);
  const tasksCount = uint32(count);
  const columns: Columns = { count, ids, promoted, hits, misses, strings: header.strings, stack, stackCount, files, filesCount, tasks, tasksCount };
  return wellFormed(columns) ? { meta: header.meta, columns } : undefined;
}
