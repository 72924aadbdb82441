/**
 * Work in a directory through a descriptor of it, not its path: whoever writes the store can swap
 * a link in for a directory between a look at it and a use of it, and a removal by path would
 * then follow the link out of the store. Node has no `unlinkat`; on Linux `/proc/self/fd/<fd>`
 * names the very directory the descriptor holds, whatever its path has become, so its entries
 * are named through it. Where there is no `/proc`, each name is given only after the path is seen
 * to be that directory still (which narrows the window, and cannot close it).
 */
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync } from 'node:fs';
import path from 'node:path';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

/** Names in the directory held open: `at('')` is the directory itself, `at(name)` an entry of it. */
export type At = (name: string) => string;

/** For tests: act as on a system without `/proc`. */
export const inDirectoryOptions = { proc: true };

/** Run `work` in `dir` (never through a link: the last component must be a real directory). */
export function inDirectory<T>(dir: string, work: (at: At) => T): T {
  const fd = openSync(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    const held = fstatSync(fd);
    const via = `/proc/self/fd/${fd}`;
    if (inDirectoryOptions.proc && existsSync(via)) return work((name) => (name === '' ? via : `${via}/${name}`));
    return work((name) => {
      const now = lstatSync(dir, { throwIfNoEntry: false });
      if (!now?.isDirectory() || now.ino !== held.ino || now.dev !== held.dev) throw new Error(`${dir} is no longer the directory it was`);
      return name === '' ? dir : path.join(dir, name);
    });
  } finally {
    closeSync(fd);
  }
}
