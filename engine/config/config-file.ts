/** Reading one configuration file (light: the CLI's start reads these to check its configuration cache). */
import { readNamedFile } from '../util/named-file.js';

export interface Unreadable {
  error: string;
  line?: number;
  col?: number;
}

/** Far beyond any pipeline's file: a configuration file is read whole, and never past this. */
export const CONFIG_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * A configuration file's text: a regular file (or a link to one), UTF-8, at most
 * CONFIG_FILE_MAX_BYTES — a FIFO or a device where a file belongs is refused, never waited on.
 */
export function readConfigFile(file: string): string | Unreadable {
  const read = readNamedFile(file, CONFIG_FILE_MAX_BYTES, { strict: true });
  if (read.ok) return read.text;
  return {
    error: read.code === 'ENOENT' ? 'file not found' : read.code === 'EISDIR' ? 'is a directory' : read.why,
    ...(read.line !== undefined ? { line: read.line, col: read.col! } : {}),
  };
}
