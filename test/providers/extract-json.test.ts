import { describe, expect, it } from 'vitest';
import { EXTRACT_SCAN_LIMIT, extractJson } from '../../engine/providers/extract-json.js';

describe('extractJson', () => {
  it('reads an answer that is JSON as a whole', () => {
    expect(extractJson('  {"score": 0.8, "passed": true}\n')).toEqual({ ok: true, value: { score: 0.8, passed: true } });
    expect(extractJson('[1, 2]')).toEqual({ ok: true, value: [1, 2] });
  });

  it('reads a ```json fenced block, ignoring the prose around it', () => {
    const answer = 'Here is my verdict:\n```json\n{"score": 0.4, "note": "} not the end"}\n```\nThanks!';
    expect(extractJson(answer)).toEqual({ ok: true, value: { score: 0.4, note: '} not the end' } });
  });

  it('reads a plain ``` fence too', () => {
    expect(extractJson('```\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
  });

  it('finds an object inside prose, with braces and quotes inside strings', () => {
    const answer = 'I think {this} is fine. Result: {"claim": "use \\"{x}\\"", "n": {"m": [1, {"k": 2}]}} — done.';
    expect(extractJson(answer)).toEqual({ ok: true, value: { claim: 'use "{x}"', n: { m: [1, { k: 2 }] } } });
  });

  it('takes the first balanced object when there are several', () => {
    expect(extractJson('first {"a": 1} then {"b": 2}')).toEqual({ ok: true, value: { a: 1 } });
  });

  it('prefers an object in prose to a bare scalar answer, and falls back to the scalar', () => {
    expect(extractJson('42')).toEqual({ ok: true, value: 42 });
    expect(extractJson('"just a string"')).toEqual({ ok: true, value: 'just a string' });
  });

  it('says nothing was found when there is no JSON', () => {
    expect(extractJson('I cannot judge this proposal.')).toEqual({ ok: false, reason: 'no JSON found in the answer' });
    expect(extractJson('broken {"a": 1')).toEqual({ ok: false, reason: 'no JSON found in the answer' });
  });

  it('only scans a bounded prefix, saying so when nothing was found in it', () => {
    const late = 'x'.repeat(EXTRACT_SCAN_LIMIT) + '{"a": 1}';
    expect(extractJson(late)).toEqual({ ok: false, reason: `no JSON found in the first ${EXTRACT_SCAN_LIMIT} characters of the answer` });
  });

  it('returns for a 5 MiB adversarial answer of unbalanced openers', () => {
    const hostile = '{"a": ['.repeat((5 * 1024 * 1024) / 7);
    expect(extractJson(hostile).ok).toBe(false);
    const nested = '{'.repeat(5 * 1024 * 1024);
    expect(extractJson(nested).ok).toBe(false);
  });
});
