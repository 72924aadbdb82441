/**
 * File globs for the pool's match rule (SPEC §5.8): `*` and `?` stay within a path segment, `**`
 * crosses `/` (`**\/` also matches no directory at all), `[abc]`, `[a-z]` and `[!a]` are
 * character classes, `{a,b}` alternatives and `\` escapes the next character. A pattern without
 * `/` matches the path's basename. Globs come from proposals (untrusted), so matching is a
 * set-of-states simulation — time linear in the path for a given pattern, no backtracking — and
 * a malformed construct (an unclosed `[` or `{`) is taken literally rather than refused. Pure.
 */

type Token =
  | { kind: 'char'; char: string }
  | { kind: 'one' }
  | { kind: 'class'; negate: boolean; ranges: [string, string][] }
  | { kind: 'star' }
  | { kind: 'globstar' }
  /** `**\/`: nothing, or anything that ends with `/` (zero or more whole directories). */
  | { kind: 'dirs' };

export interface Glob {
  readonly pattern: string;
  matches(path: string): boolean;
}

/** Longer patterns never match (a proposal field is untrusted; real globs are short). */
export const MAX_GLOB_LENGTH = 1024;
const MAX_ALTERNATIVES = 64;

/** The index of the `}` closing the `{` at `open`, or -1. */
function closingBrace(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\') i++;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return i;
  }
  return -1;
}

/** The top-level comma-separated parts of `{…}`'s inside. */
function splitAlternatives(inside: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inside.length; i++) {
    const char = inside[i];
    if (char === '\\') i++;
    else if (char === '{') depth++;
    else if (char === '}') depth--;
    else if (char === ',' && depth === 0) {
      parts.push(inside.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(inside.slice(start));
  return parts;
}

/** Expand `{a,b}` alternatives (nested too); a brace with no comma, or unclosed, is literal. */
export function expandBraces(pattern: string): string[] {
  // Too many alternatives: the pattern is taken literally (it then matches next to nothing).
  return expand(pattern) ?? [pattern];
}

/** The expansion, or undefined when it would exceed MAX_ALTERNATIVES. */
function expand(pattern: string): string[] | undefined {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '\\') {
      i++;
      continue;
    }
    if (pattern[i] !== '{') continue;
    const close = closingBrace(pattern, i);
    if (close < 0) return [pattern];
    const parts = splitAlternatives(pattern.slice(i + 1, close));
    if (parts.length < 2) continue;
    const head = pattern.slice(0, i);
    const tails = expand(pattern.slice(close + 1));
    if (!tails) return undefined;
    const out: string[] = [];
    for (const tail of tails) {
      for (const part of parts) {
        const middles = expand(part);
        if (!middles) return undefined;
        for (const middle of middles) {
          out.push(head + middle + tail);
          if (out.length > MAX_ALTERNATIVES) return undefined;
        }
      }
    }
    return out;
  }
  return [pattern];
}

function tokenize(pattern: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '\\' && i + 1 < pattern.length) tokens.push({ kind: 'char', char: pattern[++i]! });
    else if (char === '?') tokens.push({ kind: 'one' });
    else if (char === '*') {
      let stars = 1;
      while (pattern[i + 1] === '*') {
        stars++;
        i++;
      }
      if (stars === 1) tokens.push({ kind: 'star' });
      else if (pattern[i + 1] === '/') {
        tokens.push({ kind: 'dirs' });
        i++;
      } else tokens.push({ kind: 'globstar' });
    } else if (char === '[') {
      const parsed = parseClass(pattern, i);
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.end;
      } else tokens.push({ kind: 'char', char });
    } else tokens.push({ kind: 'char', char });
  }
  return tokens;
}

/** `[…]` starting at `open`: the class and the index of its `]`, or undefined when unclosed. */
function parseClass(pattern: string, open: number): { token: Token; end: number } | undefined {
  let i = open + 1;
  const negate = pattern[i] === '!' || pattern[i] === '^';
  if (negate) i++;
  const ranges: [string, string][] = [];
  let first = true;
  for (; i < pattern.length; i++) {
    let char = pattern[i]!;
    if (char === ']' && !first) return { token: { kind: 'class', negate, ranges }, end: i };
    first = false;
    if (char === '\\' && i + 1 < pattern.length) char = pattern[++i]!;
    if (pattern[i + 1] === '-' && i + 2 < pattern.length && pattern[i + 2] !== ']') {
      let to = pattern[i + 2]!;
      i += 2;
      if (to === '\\' && i + 1 < pattern.length) to = pattern[++i]!;
      ranges.push([char, to]);
    } else ranges.push([char, char]);
  }
  return undefined;
}

function inClass(token: Extract<Token, { kind: 'class' }>, char: string): boolean {
  const hit = token.ranges.some(([from, to]) => char >= from && char <= to);
  return hit !== token.negate;
}

/** Run the tokens over `text` as a set of states (no backtracking): O(text × tokens). */
function run(tokens: readonly Token[], text: string): boolean {
  const n = tokens.length;
  let current = new Uint8Array(n + 1);
  let next = new Uint8Array(n + 1);
  const close = (states: Uint8Array) => {
    // Zero-width: a star, globstar or dirs token may match nothing.
    for (let i = 0; i < n; i++) {
      const kind = tokens[i]!.kind;
      if (states[i] && (kind === 'star' || kind === 'globstar' || kind === 'dirs')) states[i + 1] = 1;
    }
  };
  current[0] = 1;
  close(current);
  for (let at = 0; at < text.length; at++) {
    const char = text[at]!;
    next.fill(0);
    let any = false;
    for (let i = 0; i < n; i++) {
      if (!current[i]) continue;
      const token = tokens[i]!;
      switch (token.kind) {
        case 'char':
          if (char === token.char) next[i + 1] = 1;
          break;
        case 'one':
          if (char !== '/') next[i + 1] = 1;
          break;
        case 'class':
          if (char !== '/' && inClass(token, char)) next[i + 1] = 1;
          break;
        case 'star':
          if (char !== '/') next[i] = 1;
          break;
        case 'globstar':
          next[i] = 1;
          break;
        case 'dirs':
          next[i] = 1;
          if (char === '/') next[i + 1] = 1;
          break;
      }
    }
    close(next);
    for (let i = 0; i <= n; i++) if (next[i]) any = true;
    if (!any) return false;
    [current, next] = [next, current];
  }
  return current[n] === 1;
}

const stripDot = (text: string) => text.replace(/^(?:\.\/)+/, '');

/**
 * The most steps compiling `pattern` and matching it against `path` can take, known before it is
 * compiled (its braces may expand to MAX_ALTERNATIVES copies of it).
 */
export function globCostBound(pattern: string, path: string): number {
  return (pattern.includes('{') ? MAX_ALTERNATIVES : 1) * (Math.min(pattern.length, MAX_GLOB_LENGTH) + 1) * (path.length + 1);
}

/** Compile a glob once; `matches` may then be called for many paths. */
export function compileGlob(pattern: string): Glob {
  if (pattern.length === 0 || pattern.length > MAX_GLOB_LENGTH) return { pattern, matches: () => false };
  const alternatives = expandBraces(pattern).map((alternative) => {
    const clean = stripDot(alternative);
    return { tokens: tokenize(clean), basename: !clean.includes('/') };
  });
  return {
    pattern,
    matches(path: string): boolean {
      const full = stripDot(path);
      const base = full.slice(full.lastIndexOf('/') + 1);
      return alternatives.some((alternative) => run(alternative.tokens, alternative.basename ? base : full));
    },
  };
}

/** Does `pattern` match `path`? (Compiles each time: use compileGlob for many paths.) */
export function globMatches(pattern: string, path: string): boolean {
  return compileGlob(pattern).matches(path);
}

/** What is wrong with a path given to match globs against (it is a path, not a pattern), or undefined. */
export function pathProblem(path: string): string | undefined {
  if (path.trim() === '') return 'it is empty';
  if (path.length > 4096) return 'it is longer than 4096 characters';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'it contains a control character';
  if (/[*?]/.test(path)) return 'it is a glob, not a path (the proposals hold the globs; give the file they should match)';
  return undefined;
}
