/**
 * cloneJson (engine/util/clone.ts), the copy every decision and commit makes of a document in
 * place of structuredClone: an equal, independent copy of JSON data, hostile keys included.
 */
import { describe, expect, it } from 'vitest';
import { cloneJson } from '../../engine/util/clone.js';

describe('cloneJson', () => {
  it('copies JSON data deeply: equal, and nothing shared with the original', () => {
    const original = { id: 'x', n: 0.82, ok: true, none: null, list: [1, 'two', { three: [3] }], nested: { a: { b: {} } }, gone: undefined };
    const copy = cloneJson(original);
    expect(copy).toStrictEqual(original);
    copy.list[2] = 'changed';
    (copy.nested.a.b as Record<string, number>)['c'] = 1;
    expect(original.list[2]).toEqual({ three: [3] });
    expect(original.nested.a.b).toEqual({});
    expect(cloneJson('text')).toBe('text');
    expect(cloneJson(null)).toBe(null);
  });

  it('keeps an own __proto__ key (as JSON.parse makes it) a plain property, never the prototype', () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "inner": {"__proto__": [1]}}') as Record<string, unknown>;
    const copy = cloneJson(hostile);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['__proto__', 'inner']);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(hostile));
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('leaves what is not JSON data to structuredClone; copies far deeper than a document may nest', () => {
    const date = new Date(0);
    const copied = cloneJson({ at: date });
    expect(copied.at).toBeInstanceOf(Date);
    expect(copied.at).not.toBe(date);
    let deep: unknown = 'bottom';
    for (let level = 0; level < 500; level++) deep = { a: [deep] };
    expect(JSON.stringify(cloneJson(deep))).toBe(JSON.stringify(deep));
  });
});
