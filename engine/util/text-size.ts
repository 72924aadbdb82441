/**
 * The cap on one text field of what comes from outside (SPEC §6: shipped, 64 KiB per text field,
 * larger is declined, not hung on): source records and candidates in a transform, and the same
 * cap for a proposal given to `propose` and a person's arguments to a review command.
 */
import { isObject } from './json-path.js';

export const DEFAULT_MAX_FIELD_BYTES = 64 * 1024;

/** What is said of a text over the cap: `<name> is N bytes, over the CAP-byte cap per text field`. */
export function overCap(name: string, bytes: number, cap: number): string {
  return `${name} is ${bytes} bytes, over the ${cap}-byte cap per text field`;
}

/**
 * The most a proposal's key (its source record's id) may hold, in UTF-8 bytes: a key is an
 * identifier, indexed by every backend — PostgreSQL's B-tree takes at most 2,704 bytes an entry,
 * and a 3,000-character key failed the whole run there.
 */
export const KEY_MAX_BYTES = 1024;

/** Why `key` cannot be a key (too long), or undefined. */
export function keyTooLong(key: string): string | undefined {
  if (key.length * 3 <= KEY_MAX_BYTES) return undefined;
  const bytes = Buffer.byteLength(key, 'utf8');
  return bytes > KEY_MAX_BYTES ? `is ${bytes} bytes; a key is at most ${KEY_MAX_BYTES}` : undefined;
}

/**
 * The first text field (dotted path, in document order) over `maxBytes` UTF-8 bytes, with its size.
 * Iterative, and a path is spelled out only for the field found: a value from outside may nest far
 * deeper than the call stack goes.
 */
export function oversizeField(value: unknown, maxBytes: number): { path: string; bytes: number } | undefined {
  interface Node {
    value: unknown;
    key: string;
    parent: Node | undefined;
  }
  const pathOf = (node: Node): string => {
    const keys: string[] = [];
    for (let at: Node | undefined = node; at?.parent; at = at.parent) keys.push(at.key);
    return keys.reverse().join('.') || '(the value)';
  };
  const pending: Node[] = [{ value, key: '', parent: undefined }];
  for (let node = pending.pop(); node; node = pending.pop()) {
    const current = node.value;
    if (typeof current === 'string') {
      // Cheap bounds first: a UTF-16 unit is 1–3 UTF-8 bytes.
      if (current.length * 3 <= maxBytes) continue;
      const bytes = Buffer.byteLength(current, 'utf8');
      if (bytes > maxBytes) return { path: pathOf(node), bytes };
      continue;
    }
    const entries: [string, unknown][] = Array.isArray(current)
      ? current.map((item, index) => [String(index), item])
      : isObject(current)
        ? Object.entries(current)
        : [];
    // Pushed last first, so the first entry is looked at first.
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, child] = entries[index]!;
      pending.push({ value: child, key, parent: node });
    }
  }
  return undefined;
}
