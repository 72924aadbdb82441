/** What a directory entry is, in words ("a FIFO", "a symbolic link"…), for messages about a path that is not what it should be. */
import type { Stats } from 'node:fs';

export function fileKind(stat: Stats): string {
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  if (stat.isFile()) return 'a file';
  return 'not a regular file';
}
