/**
 * How deep a value from outside may nest before the printing layer refuses it. Serialisers recurse:
 * the YAML printer overflows the stack at about 650 levels and JSON.stringify at about 5,000, so
 * one hostile proposal file would otherwise crash a whole listing. The check itself is iterative.
 */

/** Far beyond any real proposal (a handful of levels), well below where a serialiser overflows. */
export const MAX_PRINT_DEPTH = 256;

/** Does `value` (JSON data) nest objects and arrays more than `limit` levels deep? Stops at the first path past it. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  // Two stacks (a value, its depth) rather than an object per pending value: this runs on every
  // proposal a listing prints and a judge reads.
  const values: object[] = [value];
  const depths: number[] = [1];
  for (let next = values.pop(); next !== undefined; next = values.pop()) {
    const depth = depths.pop()!;
    if (depth > limit) return true;
    if (Array.isArray(next)) {
      for (let i = 0; i < next.length; i++) {
        const child: unknown = next[i];
        if (typeof child === 'object' && child !== null) {
          values.push(child);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const key in next) {
        const child: unknown = (next as Record<string, unknown>)[key];
        if (typeof child === 'object' && child !== null) {
          values.push(child);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}
