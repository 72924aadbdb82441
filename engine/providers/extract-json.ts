/**
 * Lenient extraction of one JSON value from a model's answer: the whole text, a fenced code block,
 * or the first balanced {...} / [...] in the prose. Bounded: only a prefix of the answer is
 * scanned, in one linear pass per candidate start, with a cap on the candidates tried — so a huge
 * or adversarial answer cannot hang it.
 */
export const EXTRACT_SCAN_LIMIT = 256 * 1024;
const MAX_CANDIDATES = 32;

export type Extracted = { ok: true; value: unknown } | { ok: false; reason: string };

function tryParse(text: string): { ok: true; value: unknown } | undefined {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** End index (exclusive) of the balanced value starting at `start`, or -1. */
function balancedEnd(text: string, start: number): number {
  const open = text[start];
  const close = open === '{' ? '}' : ']';
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') {
      depth--;
      if (depth === 0) return char === close ? i + 1 : -1;
      if (depth < 0) return -1;
    }
  }
  return -1;
}

export function extractJson(answer: string, limit = EXTRACT_SCAN_LIMIT): Extracted {
  const text = answer.length > limit ? answer.slice(0, limit) : answer;
  const whole = tryParse(text.trim());
  if (whole && typeof whole.value === 'object' && whole.value !== null) return whole;
  const fence = /```(?:json|JSON)?\s*\n([\s\S]*?)```/.exec(text);
  if (fence) {
    const fenced = tryParse(fence[1]!.trim());
    if (fenced) return fenced;
  }
  let tried = 0;
  for (let i = 0; i < text.length && tried < MAX_CANDIDATES; i++) {
    const char = text[i];
    if (char !== '{' && char !== '[') continue;
    tried++;
    const end = balancedEnd(text, i);
    if (end < 0) continue;
    const parsed = tryParse(text.slice(i, end));
    if (parsed && typeof parsed.value === 'object' && parsed.value !== null) return parsed;
    i = end - 1;
  }
  if (whole) return whole;
  return { ok: false, reason: answer.length > limit ? `no JSON found in the first ${limit} characters of the answer` : 'no JSON found in the answer' };
}
