/**
 * A file a person names for the engine to read — a configuration file, `rescore --rubric FILE` —
 * as text: a regular file (a link to one is followed: it is the person's own path) of at most
 * `maxBytes`. A FIFO is never opened to wait on, a device or an endless file never read past the
 * bound, and with `strict` a byte that is not UTF-8 is refused with its line and column rather
 * than turned into U+FFFD and carried on. `why` says in words what is wrong instead.
 */
import { isUtf8 } from 'node:buffer';
import { fileKind } from './file-kind.js';

export type NamedFile = { ok: true; text: string } | { ok: false; why: string; code?: string; line?: number; col?: number };

export function readNamedFile(file: string, maxBytes: number, options: { strict?: boolean } = {}): NamedFile {
  const { closeSync, constants, fstatSync, openSync, readSync } = process.getBuiltinModule('node:fs');
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      why: code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message,
      ...(code ? { code } : {}),
    };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, why: `it is ${fileKind(stat)}, not a regular file` };
    // Sized by the fstat, grown if the file grew since: read to its end or one byte past the bound.
    let buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > maxBytes) break;
        const bigger = Buffer.allocUnsafe(Math.min(buffer.length * 2, maxBytes + 1));
        buffer.copy(bigger, 0, 0, length);
        buffer = bigger;
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    if (length > maxBytes) return { ok: false, why: `it is larger than ${sizeInWords(maxBytes)}` };
    const bytes = buffer.subarray(0, length);
    if (options.strict && !isUtf8(bytes)) {
      const at = firstInvalidUtf8(bytes);
      const lineStart = bytes.lastIndexOf(0x0a, at - 1) + 1;
      const line = countNewlines(bytes, lineStart) + 1;
      const col = bytes.toString('utf8', lineStart, at).length + 1;
      const byte = `0x${bytes[at]!.toString(16).toUpperCase().padStart(2, '0')}`;
      return { ok: false, why: `it is not UTF-8 text (byte ${byte} at line ${line}, column ${col})`, line, col };
    }
    return { ok: true, text: bytes.toString('utf8') };
  } finally {
    closeSync(fd);
  }
}

function sizeInWords(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}

function countNewlines(bytes: Uint8Array, end: number): number {
  let count = 0;
  for (let index = bytes.indexOf(0x0a); index !== -1 && index < end; index = bytes.indexOf(0x0a, index + 1)) count++;
  return count;
}

/** The offset of the first byte that does not begin a well-formed UTF-8 sequence (RFC 3629), or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let index = 0; index < bytes.length; ) {
    const lead = bytes[index]!;
    if (lead < 0x80) {
      index++;
      continue;
    }
    const tail = lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : 0;
    if (tail === 0) return index;
    // The second byte's range rules out overlong forms, surrogates and code points past U+10FFFF.
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    const second = bytes[index + 1];
    if (second === undefined || second < low || second > high) return index;
    for (let k = 2; k <= tail; k++) {
      const next = bytes[index + k];
      if (next === undefined || next < 0x80 || next > 0xbf) return index;
    }
    index += tail + 1;
  }
  return -1;
}
