/**
 * A deep copy of JSON data — plain objects, arrays, strings, numbers, booleans, null — for the
 * documents every decision and commit copies: several times faster than structuredClone on them
 * (which serialises and deserialises through V8's wire format). An own `__proto__` key (JSON.parse
 * makes one) stays a plain property of the copy.
 * Anything that is not JSON data (a Date, a Map: never in a document) is left to structuredClone.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length);
    for (let index = 0; index < value.length; index++) copy[index] = cloneJson(value[index]);
    return copy as T;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = cloneJson((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(copy, key, { value: child, writable: true, enumerable: true, configurable: true });
    else copy[key] = child;
  }
  return copy as T;
}
