/**
 * What the atomic writes (atomic-write.ts) and the temp files made ahead (temp-supply.ts) share:
 * a module below both, as atomic-write.ts imports temp-supply.ts.
 */
import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';

/** In every temp name this process makes, so two processes that reuse a pid never make the same name. */
export const processSuffix = randomBytes(3).toString('hex');

/** Remove a file if it is there. */
export function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
