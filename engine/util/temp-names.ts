/**
 * What the atomic writes (atomic-write.ts) and the temp files made ahead (temp-supply.ts) share:
 * a module below both, as atomic-write.ts imports temp-supply.ts.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, unlinkSync } from 'node:fs';

/** In every temp name this process makes, so two processes that reuse a pid never make the same name. */
export const processSuffix = randomBytes(3).toString('hex');

/**
 * The same for the names of temp files made ahead (`.supply.<pid>.<n><suffix>.tmp`): another first
 * digit, so they never equal an atomic write's temp name for a target named `supply` (same form).
 */
export const supplySuffix = `${(Number.parseInt(processSuffix[0]!, 16) ^ 8).toString(16)}${processSuffix.slice(1)}`;

/**
 * The suffixes of every copy of this module loaded in this thread (a bundle and the unbundled
 * engine, say): a temp file named with this process's pid and one of them is this process's own.
 * (A worker thread that loads the engine has copies of its own, not listed here.)
 */
const ours: Set<string> = ((globalThis as Record<symbol, Set<string> | undefined>)[Symbol.for('pipeline.temp-suffixes')] ??= new Set<string>());
ours.add(processSuffix);
ours.add(supplySuffix);

/** Does a temp name's tail (its counter and suffix) end with a suffix this process makes? */
export function madeHere(tail: string): boolean {
  for (const suffix of ours) if (tail.endsWith(suffix)) return true;
  return false;
}

/** Remove a file if it is there. */
export function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Close a descriptor if it is still open. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
