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
