/** Value expressions (engine/expr/evaluate.ts): each operator, what counts as missing, copying, secrets. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { evaluate, operatorOf, secretsUsed, type ExprContext } from '../../engine/expr/evaluate.js';

const NOW = '2026-11-01T12:00:00.000Z';
const root = {
  status: 'confirmed',
  visibility: 'org',
  candidate: { claim: 'pnpm 8 refuses old lockfiles', tags: ['a', 'b'], applies_to: { stack: ['pnpm'] } },
  judges: [
    { type: 'standard', passed: true },
    { type: 'adversarial', passed: false },
    { type: 'standard', passed: false },
  ],
  text: 'Title: Fix it\nVersions: node >=20, pnpm 8.x\n',
  empty: '',
};

const context = (extra: Partial<ExprContext> = {}): ExprContext => ({ root, now: NOW, ...extra });
const value = (expr: unknown, extra: Partial<ExprContext> = {}) => evaluate(expr, context(extra)).value;

describe('evaluate', () => {
  it('leaves literals as they are and evaluates maps and lists member by member, dropping what yields nothing', () => {
    expect(value('plain')).toBe('plain');
    expect(value(3)).toBe(3);
    expect(value(null)).toBeNull();
    expect(
      value({ a: { $field: 'status' }, b: [1, { $field: 'visibility' }, { $field: 'nope', default: 'd' }], c: { $match: 'empty', pattern: '(x)' } }),
    ).toEqual({ a: 'confirmed', b: [1, 'org', 'd'] });
    expect(value([{ $field: 'missing' }, 'kept'])).toEqual(['kept']);
  });

  it('evaluates one expression object against each root and context afresh (it is compiled once, its results are never shared)', () => {
    const expr = {
      a: { $field: 'n' },
      b: { $arg: 'x', default: 'none' },
      c: { $count: 'list', where: { ok: true } },
      d: { $template: 'n={{n}}' },
      e: { $first: [{ $field: 'gone' }, { $field: 'n' }] },
      f: { $now: true },
    };
    const first = evaluate(expr, { root: { n: 1, list: [{ ok: true }] }, now: 'then', args: { x: 'y' } });
    (first.value as Record<string, unknown>)['a'] = 'changed';
    const second = evaluate(expr, { root: { n: 2, list: [] }, now: NOW });
    expect(second).toEqual({ value: { a: 2, b: 'none', c: 0, d: 'n=2', e: 2, f: NOW }, missing: [] });
    expect(evaluate(expr, { root: {}, now: NOW })).toEqual({ value: { b: 'none', d: 'n=', f: NOW }, missing: ['n', 'list', 'n'] });
    expect(secretsUsed({ k: { $hmac: 'author', message: '' } })).toEqual(new Set(['author']));
  });

  it('treats a map with more than one $ key, or an unknown one, as a plain map', () => {
    expect(operatorOf({ $field: 'a', $arg: 'b' })).toBeUndefined();
    expect(operatorOf({ $nope: 1 })).toBeUndefined();
    expect(operatorOf({ $field: 'a', default: 1 })).toBe('$field');
    expect(value({ $nope: { $field: 'status' } })).toEqual({ $nope: 'confirmed' });
  });

  it('$field reads a path of the root (list indexes too), else its default, else records the path as missing', () => {
    expect(evaluate({ $field: 'candidate.applies_to.stack.0' }, context())).toEqual({ value: 'pnpm', missing: [] });
    expect(evaluate({ $field: 'candidate.nope', default: null }, context())).toEqual({ value: null, missing: [] });
    expect(evaluate({ a: { $field: 'x.y' }, b: { $field: 'z' } }, context())).toEqual({ value: {}, missing: ['x.y', 'z'] });
    // a value present but falsy is a value, not a miss
    expect(evaluate({ $field: 'empty', default: 'd' }, context())).toEqual({ value: '', missing: [] });
  });

  it('$arg reads an event argument; a missing one is named as the option --name', () => {
    expect(value({ $arg: 'reason' }, { args: { reason: 'dup' } })).toBe('dup');
    expect(value({ $arg: 'reason', default: 'none given' })).toBe('none given');
    expect(evaluate({ $arg: 'reason' }, context()).missing).toEqual(['--reason']);
  });

  it("$now is the operation's timestamp and $value a literal that is not evaluated", () => {
    expect(value({ at: { $now: true } })).toEqual({ at: NOW });
    expect(value({ $value: { $field: 'status' } })).toEqual({ $field: 'status' });
  });

  it('copies what it takes from the root, arguments and literals, unless told not to', () => {
    const copied = value({ $field: 'candidate.applies_to' }) as { stack: string[] };
    expect(copied).toEqual(root.candidate.applies_to);
    expect(copied).not.toBe(root.candidate.applies_to);
    expect(value({ $field: 'candidate.applies_to' }, { copy: false })).toBe(root.candidate.applies_to);
    const literal = { deep: [1] };
    expect(value({ $value: literal })).not.toBe(literal);
    expect(value({ $value: literal }, { copy: false })).toBe(literal);
    const arg = { list: [1] };
    expect(value({ $arg: 'x' }, { args: { x: arg } })).not.toBe(arg);
  });

  it('$count counts a list, or its items matching every key of where; a path that is no list is missing', () => {
    expect(value({ $count: 'judges' })).toBe(3);
    expect(value({ $count: 'judges', where: { type: 'standard' } })).toBe(2);
    expect(value({ $count: 'judges', where: { type: 'standard', passed: false } })).toBe(1);
    expect(evaluate({ $count: 'status' }, context())).toEqual({ value: undefined, missing: ['status'] });
  });

  it("$lookup maps a field's value, else its default, else is missing (no inherited keys)", () => {
    expect(value({ $lookup: 'visibility', map: { org: 'internal', public: 'world' } })).toBe('internal');
    expect(value({ $lookup: 'visibility', map: { public: 'world' }, default: 'other' })).toBe('other');
    expect(evaluate({ $lookup: 'visibility', map: {} }, context()).missing).toEqual(['visibility']);
    expect(evaluate({ $lookup: 'kind', map: {} }, { root: { kind: 'constructor' }, now: NOW })).toEqual({ value: undefined, missing: ['kind'] });
  });

  it('$template renders the root and names the placeholders with no value', () => {
    expect(evaluate({ $template: '{{status}}: {{candidate.claim}}' }, context())).toEqual({ value: 'confirmed: pnpm 8 refuses old lockfiles', missing: [] });
    expect(evaluate({ $template: '[{{nope}}]' }, context())).toEqual({ value: '[]', missing: ['nope'] });
  });

  it('$hmac is the hex HMAC-SHA256 of the rendered message, cut to length; an absent secret is an error', () => {
    const full = createHmac('sha256', 'k3y').update('org:confirmed').digest('hex');
    const secrets = { author: 'k3y' };
    expect(value({ $hmac: 'author', message: '{{visibility}}:{{status}}' }, { secrets })).toBe(full);
    expect(value({ $hmac: 'author', message: '{{visibility}}:{{status}}', length: 12 }, { secrets })).toBe(full.slice(0, 12));
    expect(evaluate({ $hmac: 'author', message: '{{gone}}' }, context({ secrets })).missing).toEqual(['gone']);
    expect(() => value({ $hmac: 'other', message: 'x' }, { secrets })).toThrow('secret "other" was not provided');
  });

  it('$hmac digests, remembered across evaluations, are of their own key and message', () => {
    const expected = (key: string, message: string) => createHmac('sha256', key).update(message).digest('hex');
    for (const [key, status] of [
      ['k1', 'confirmed'],
      ['k2', 'confirmed'],
      ['k1', 'approved'],
      ['k1', 'confirmed'],
    ] as const) {
      expect(value({ $hmac: 'author', message: '{{visibility}}:{{status}}' }, { root: { ...root, status }, secrets: { author: key } })).toBe(
        expected(key, `org:${status}`),
      );
    }
    // More distinct messages than are remembered: every one still right.
    for (let n = 0; n < 300; n++) {
      expect(value({ $hmac: 'author', message: '{{n}}' }, { root: { n }, secrets: { author: 'k' } })).toBe(expected('k', String(n)));
    }
  });

  it('$match yields a trimmed capture (group 1 unless told), line anchors per line; no match or an empty capture yields nothing', () => {
    expect(value({ $match: 'text', pattern: '^Title:(.*)$' })).toBe('Fix it');
    expect(value({ $match: 'text', pattern: '^(Title): (.*)$', group: 2 })).toBe('Fix it');
    expect(value({ $match: 'text', pattern: '^Nope:(.*)$' })).toBeUndefined();
    expect(value({ $match: 'text', pattern: '^Title:( *)' })).toBeUndefined();
    expect(value({ $match: 'judges', pattern: '(.*)' })).toBeUndefined();
  });

  it('$pairs reads "name range, name range" from the matching line into a map', () => {
    expect(value({ $pairs: 'text', line: '^Versions:(.*)$', item: '([a-z]+) ([^,]+)' })).toEqual({ node: '>=20', pnpm: '8.x' });
    expect(value({ $pairs: 'text', line: '^Nope:(.*)$', item: '(a)(b)' })).toBeUndefined();
    expect(value({ $pairs: 'text', line: '^Versions:(.*)$', item: '(zzz)(q)' })).toBeUndefined();
  });

  it('$keys lists the keys of the map its expression yields', () => {
    expect(value({ $keys: { $field: 'candidate' } })).toEqual(['claim', 'tags', 'applies_to']);
    expect(value({ $keys: { $field: 'candidate.tags' } })).toBeUndefined();
  });

  it('$first yields the first option with a value (an empty string is none) and records no misses', () => {
    expect(evaluate({ $first: [{ $field: 'nope' }, { $field: 'empty' }, { $field: 'visibility' }, 'literal'] }, context())).toEqual({
      value: 'org',
      missing: [],
    });
    expect(evaluate({ $first: [{ $field: 'nope' }] }, context())).toEqual({ value: undefined, missing: [] });
  });
});

describe('secretsUsed', () => {
  it('names every $hmac secret, however deep', () => {
    expect([...secretsUsed({ a: [{ $hmac: 'one', message: '' }], b: { c: { $first: [{ $hmac: 'two' }] } }, d: 'x' })].sort()).toEqual(['one', 'two']);
    expect(secretsUsed({ $field: 'a' }).size).toBe(0);
  });
});
