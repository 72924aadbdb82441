/**
 * How deep a value from outside may nest before the printing layer refuses it. Serialisers recurse:
 * the YAML printer overflows the stack at about 650 levels and JSON.stringify at about 5,000, so
 * one hostile proposal file would otherwise crash a whole listing. The check itself is iterative.
 */

/** Far beyond any real proposal (a handful of levels), well below where a serialiser overflows. */
export const MAX_PRINT_DEPTH = 256;

/** Does `value` (JSON data) nest objects and arrays more than `limit` levels deep? Stops at the first path past it. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: { value: object; depth: number }[] = [];
  if (typeof value === 'object' && value !== null) pending.push({ value, depth: 1 });
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.depth > limit) return true;
    for (const child of Object.values(next.value)) {
      if (typeof child === 'object' && child !== null) pending.push({ value: child as object, depth: next.depth + 1 });
    }
  }
  return false;
}
