/**
 * JSON handed to a command from outside (`propose FILE|-`, `judge --verdicts FILE|-`) is untrusted
 * (SPEC §12): read with a size bound, so `--verdicts /dev/zero` or an endless pipe ends in a clear
 * refusal instead of memory growing until the process dies.
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { Context } from './context.js';

/** Far beyond a proposal or a panel's verdicts (each text field is capped at 64 KiB). */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;

export type InputText = { ok: true; text: string } | { ok: false; message: string };

/** Read at most `maxBytes` from a stream; stops reading (and destroys the stream) as soon as there is more. */
async function readCapped(stream: AsyncIterable<unknown>, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    length += bytes.length;
    // Leaving the loop early ends the iteration, which destroys the stream: nothing more is read.
    if (length > maxBytes) return undefined;
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, length);
}

/**
 * The text of FILE, or of stdin for `-` or no source, if it is at most `maxBytes` long. `what`
 * names the input in the messages ("--verdicts input", "the proposal").
 */
export async function readInputText(context: Context, source: string | undefined, what: string, maxBytes = MAX_INPUT_BYTES): Promise<InputText> {
  const fromStdin = source === undefined || source === '-';
  const from = fromStdin ? 'stdin' : source;
  let bytes: Buffer | undefined;
  try {
    bytes = await readCapped(fromStdin ? context.io.stdin : createReadStream(path.resolve(context.io.cwd, source)), maxBytes);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    return { ok: false, message: `cannot read ${what} from ${from}: ${why}` };
  }
  if (bytes === undefined) return { ok: false, message: `${what} is larger than ${formatMiB(maxBytes)} (${from}); stopped reading there` };
  return { ok: true, text: bytes.toString('utf8') };
}

function formatMiB(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}
