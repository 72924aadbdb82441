/**
 * Extraction of the one JSON value a model's answer stands for. Models quote what they judge, so
 * JSON planted in a proposal can appear anywhere in an answer before the model's own verdict: the
 * answer is therefore read by its **last** top-level `{…}` (a fenced block is just text around
 * it), and an answer whose last object is incomplete or not valid JSON is unusable — never read
 * by an earlier object. An answer that is JSON as a whole is that value.
 *
 * Linear passes (at most 17) over at most `limit` characters (answers are capped at 1 MiB before
 * this), no backtracking, and only the last span parsed: a huge or adversarial answer cannot hang it.
 */
import { DEFAULT_MAX_ANSWER_BYTES } from './types.js';

export const EXTRACT_SCAN_LIMIT = DEFAULT_MAX_ANSWER_BYTES;

export type Extracted = { ok: true; value: unknown } | { ok: false; reason: string };

function tryParse(text: string): { ok: true; value: unknown } | undefined {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** What one scan found: the last span that closed, and where a span left open after it starts. */
export interface Spans {
  /** Start and end (exclusive) of the last top-level `{…}` that closed, if any. */
  last?: { start: number; end: number };
  /** Start of a span opened after `last` that never closed (a stray brace, or a truncated verdict). */
  openAt?: number;
}

/**
 * Scan `text` from `from`. Outside a span everything is prose (quotes and `[` included), so nothing
 * said before a span can change how it is read; inside one, strings and escapes are followed and
 * `{`/`[` nest, so a brace inside a string never ends it. Pure, linear, constant extra memory.
 */
export function scanSpans(text: string, from = 0): Spans {
  let lastStart = -1;
  let lastEnd = -1;
  let start = -1;
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    if (start < 0) {
      // Prose: jump to the next brace.
      i = text.indexOf('{', i);
      if (i < 0) break;
      start = i;
      depth = 1;
      inString = false;
      continue;
    }
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
      continue;
    }
    if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) depth++;
    else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) {
        // A span closed by `]` is broken; it still counts as the last span, so it is never skipped over.
        lastStart = start;
        lastEnd = i + 1;
        start = -1;
      }
    }
  }
  return { ...(lastStart >= 0 ? { last: { start: lastStart, end: lastEnd } } : {}), ...(start >= 0 ? { openAt: start } : {}) };
}

/**
 * A brace left open is read again as prose, at most this many times: a stray `{` before the verdict
 * (planted or not) then costs nothing, and the work stays bounded (at most 17 passes).
 */
const MAX_RESCANS = 16;

/**
 * The last top-level span of `text`. When a span is left open at the end, only what follows its
 * opening brace can hold the answer (everything before it came earlier), so the scan resumes just
 * after that brace — it never falls back to a span that closed before it.
 */
export function lastSpan(text: string): { ok: true; start: number; end: number } | { ok: false; reason: string } {
  let from = 0;
  for (let pass = 0; pass <= MAX_RESCANS; pass++) {
    const spans = scanSpans(text, from);
    if (spans.openAt === undefined) {
      if (spans.last) return { ok: true, ...spans.last };
      return { ok: false, reason: pass === 0 ? 'no JSON found in the answer' : 'the last JSON object in the answer is not complete' };
    }
    from = spans.openAt + 1;
  }
  return { ok: false, reason: 'the last JSON object in the answer is not complete' };
}

/**
 * The JSON value an answer stands for: the whole answer when it is JSON, else its last top-level
 * object. Unusable (ok: false) when there is none, when the last one is broken or never closes, or
 * when the answer is longer than `limit` characters.
 */
export function extractJson(answer: string, limit = EXTRACT_SCAN_LIMIT): Extracted {
  if (answer.length > limit) return { ok: false, reason: `the answer is longer than ${limit} characters` };
  const whole = tryParse(answer.trim());
  if (whole) return whole;
  const span = lastSpan(answer);
  if (!span.ok) return span;
  const parsed = tryParse(answer.slice(span.start, span.end));
  if (!parsed || parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    return { ok: false, reason: 'the last {…} in the answer is not a JSON object' };
  }
  return parsed;
}
