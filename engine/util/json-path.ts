/** Dotted-path access to plain JSON values (`candidate.applies_to.scope`). Pure. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function splitPath(path: string): string[] {
  return path === '' ? [] : path.split('.');
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at `path`, or undefined when any step is missing. */
export function getPath(root: unknown, path: string): unknown {
  let node: unknown = root;
  for (const key of splitPath(path)) {
    if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
    else if (isObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

export function hasPath(root: unknown, path: string): boolean {
  const keys = splitPath(path);
  const last = keys.pop();
  if (last === undefined) return true;
  const parent = getPath(root, keys.join('.'));
  return isObject(parent) && Object.hasOwn(parent, last);
}

/**
 * Set `path` on a (mutable) object, creating intermediate objects. Existing keys keep their place.
 * A path through `__proto__` is refused: assigning it would reach the object's prototype, or every
 * object's (the configuration's paths are checked at load; this is the last line).
 */
export function setPath(root: Record<string, unknown>, path: string, value: unknown): void {
  const keys = splitPath(path);
  const last = keys.pop();
  if (last === undefined) throw new Error('cannot set the empty path');
  if (last === '__proto__' || keys.includes('__proto__')) throw new Error(`cannot set "${path}": __proto__ is never a field`);
  let node: Record<string, unknown> = root;
  for (const key of keys) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (!isObject(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[last] = value;
}

export function removePath(root: Record<string, unknown>, path: string): void {
  const keys = splitPath(path);
  const last = keys.pop();
  if (last === undefined) return;
  const parent = getPath(root, keys.join('.'));
  if (isObject(parent)) delete parent[last];
}

/**
 * A counter's value (a field an `increment` effect keeps): a whole number ≥ 0, else 0 — what a
 * hand edit left there (-5, 1.5, "3") counts as none, the same wherever it is read or counted on.
 */
export function countFrom(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/** Structural equality of JSON values, key order included (it decides file bytes). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
