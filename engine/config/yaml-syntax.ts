/**
 * YAML syntax errors in plain words. The parser reports where it got lost, which is often lines
 * after the mistake (an over-indented line 15 shows up as "All mapping items must start at the
 * same column" on every later sibling), and in its own terms. This finds the line that is wrong
 * — the over-indented key, the tab, the bracket or quote opened and never closed — says what is
 * wrong with it, and reports only that: everything after a syntax error is guesswork. Pure.
 */
import type { YAMLError } from 'yaml';

export interface SyntaxProblem {
  /** 1-based line and column of the offending spot. */
  line: number;
  col: number;
  code: string;
  message: string;
  hint?: string;
}

interface Line {
  text: string;
  indent: number;
  /** Holds YAML structure: not blank, not only a comment, not inside a block scalar. */
  content: boolean;
}

const KEY = /^\s*(?:-\s+)?(?:"[^"]*"|'[^']*'|[^\s#:'"[\]{},][^#:]*?)\s*:(?:\s|$)/;

function splitLines(text: string): Line[] {
  const out: Line[] = [];
  let block: number | undefined; // indentation of the key that opened a block scalar (| or >)
  for (const raw of text.split('\n')) {
    const text = raw.replace(/\r$/, '');
    const indent = /^ */.exec(text)![0].length;
    const blank = text.trim() === '' || text.trim().startsWith('#');
    if (block !== undefined && (blank || indent > block)) {
      out.push({ text, indent, content: false });
      continue;
    }
    block = /:\s*[|>][-+0-9]*\s*(#.*)?$/.test(text) || /^\s*-\s+[|>][-+0-9]*\s*$/.test(text) ? indent : undefined;
    out.push({ text, indent, content: !blank });
  }
  return out;
}

/** Does this line give its key a value on the same line (so it cannot hold a nested block)? */
function hasInlineValue(line: string): boolean {
  const match = KEY.exec(line);
  if (!match) return false;
  const rest = line
    .slice(match[0].length)
    .replace(/\s+#.*$/, '')
    .trim();
  return rest !== '' && !/^[|>][-+0-9]*$/.test(rest) && !/^[&!]\S*$/.test(rest);
}

const previousContent = (lines: Line[], from: number) => {
  for (let i = from - 1; i >= 0; i--) if (lines[i]!.content) return i;
  return undefined;
};
const nextContent = (lines: Line[], from: number) => {
  for (let i = from + 1; i < lines.length; i++) if (lines[i]!.content) return i;
  return undefined;
};

const TAB_HINT = 'replace the tab with spaces';
const SAME_COLUMN = 'the keys of one map start at the same column';
const spaces = (n: number) => (n === 0 ? 'no indentation' : `${n} space${n === 1 ? '' : 's'}`);
const indented = (n: number) => (n === 0 ? 'not indented' : `indented ${spaces(n)}`);

/** An over-indented line below a key that already has a value. */
function deeperThanValue(lines: Line[], at: number, above: number): SyntaxProblem {
  const parent = lines[above]!;
  return {
    line: at + 1,
    col: 1,
    code: 'config.yaml_indent',
    message: `this line is ${indented(lines[at]!.indent)}, deeper than line ${above + 1}, whose key already has a value on its line`,
    hint: `indent it like its siblings (${spaces(parent.indent)}, as on line ${above + 1}), or move the value of line ${above + 1} below it`,
  };
}

/** The parser lost its way at line `index` (0-based) with keys at mixed columns: find the line that breaks the column. */
function mixedColumns(lines: Line[], index: number): SyntaxProblem | undefined {
  const here = lines[index]!;
  // A run of deeper lines just before this one (after their parent) began at the misplaced key.
  let first: number | undefined;
  for (let i = index - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.content) continue;
    if (line.indent <= here.indent) break;
    first = i;
  }
  if (first !== undefined) {
    const above = previousContent(lines, first);
    if (above !== undefined && hasInlineValue(lines[above]!.text) && lines[above]!.indent < lines[first]!.indent) return deeperThanValue(lines, first, above);
    return {
      line: first + 1,
      col: 1,
      code: 'config.yaml_indent',
      message: `this line is ${indented(lines[first]!.indent)}, but line ${index + 1}, a key of the same map, is ${indented(here.indent)}: ${SAME_COLUMN}`,
      hint: `indent line ${first + 1} like line ${index + 1} (${spaces(here.indent)}), or the other way round`,
    };
  }
  const above = previousContent(lines, index);
  if (above !== undefined && here.indent > lines[above]!.indent && hasInlineValue(lines[above]!.text)) return deeperThanValue(lines, index, above);
  return undefined;
}

/** A key line with a value, followed by a deeper line the parser read as part of that value. */
function nestedUnderValue(lines: Line[], index: number): SyntaxProblem | undefined {
  const line = lines[index]!;
  if (/^\s*(?:-\s+)?[^\s#:'"]+:[^\s/]/.test(line.text) && !KEY.test(line.text)) {
    return { line: index + 1, col: 1, code: 'config.yaml_colon', message: 'a key needs a space after its colon', hint: 'write "key: value", not "key:value"' };
  }
  const next = nextContent(lines, index);
  if (next !== undefined && lines[next]!.indent > line.indent && hasInlineValue(line.text)) return deeperThanValue(lines, next, index);
  return undefined;
}

interface Opener {
  char: string;
  line: number;
  col: number;
}

/**
 * The bracket or quote still open at `offset`, scanning as YAML does: quotes and brackets count
 * where a value starts (or anywhere inside brackets), comments and block scalars are skipped.
 */
function openAt(lines: Line[], offset: number): Opener | undefined {
  const stack: Opener[] = [];
  let quote: Opener | undefined;
  let seen = 0;
  for (const [index, line] of lines.entries()) {
    if (seen > offset) break;
    if (!line.content && !quote && stack.length === 0) {
      seen += line.text.length + 1;
      continue;
    }
    const text = line.text;
    for (let col = 0; col < text.length && seen + col < offset; col++) {
      const char = text[col]!;
      if (quote) {
        if (quote.char === '"' && char === '\\') col++;
        else if (char === quote.char) {
          if (quote.char === "'" && text[col + 1] === "'") col++;
          else quote = undefined;
        }
        continue;
      }
      const before = text.slice(0, col).trimEnd();
      const valueStart = before === '' || /[:\-,[{]$/.test(before) || /^\s*-$/.test(before);
      if (char === '#' && (col === 0 || /\s/.test(text[col - 1]!))) break;
      const quoteStarts = valueStart || (stack.length > 0 && /[[{,:]\s*$/.test(text.slice(0, col)));
      if ((char === '"' || char === "'") && quoteStarts) quote = { char, line: index + 1, col: col + 1 };
      else if ((char === '[' || char === '{') && (valueStart || stack.length > 0)) stack.push({ char, line: index + 1, col: col + 1 });
      else if ((char === ']' || char === '}') && stack.length > 0) stack.pop();
    }
    seen += text.length + 1;
  }
  return quote ?? stack[stack.length - 1];
}

const CLOSERS: Record<string, [string, string]> = { '[': [']', 'list'], '{': ['}', 'map'], '"': ['"', 'string'], "'": ["'", 'string'] };

function unclosed(lines: Line[], offset: number): SyntaxProblem | undefined {
  const open = openAt(lines, offset);
  if (!open) return undefined;
  const [close, what] = CLOSERS[open.char]!;
  const hint = `end the ${what} with ${close} (on this line, or indented deeper than its key)`;
  return { line: open.line, col: open.col, code: 'config.yaml_unclosed', message: `the ${open.char} opened here is never closed`, hint };
}

/** The one problem worth reporting for a file's syntax errors (the parser's first, in plain words when it can be told). */
export function describeSyntax(text: string, errors: readonly YAMLError[], position: (offset: number) => { line: number; col: number }): SyntaxProblem[] {
  if (errors.length === 0) return [];
  const lines = splitLines(text);
  const sorted = [...errors].sort((a, b) => a.pos[0] - b.pos[0]);
  // Duplicate keys are mistakes of their own and cannot mislead the parser: report each one before the first real error.
  const out: SyntaxProblem[] = [];
  for (const error of sorted) {
    const at = position(error.pos[0]);
    if (error.code === 'DUPLICATE_KEY') {
      out.push(duplicateKey(lines, at));
      continue;
    }
    // The parser ran out of stack on brackets or blocks nested thousands deep: say that, not the
    // engine's own words for it, nor a hint about indentation.
    if (/Maximum call stack size exceeded/.test(error.message)) {
      out.push({
        ...at,
        code: 'config.yaml_too_deep',
        message: 'nested too deep to read (thousands of levels of brackets or blocks)',
        hint: 'no configuration nests more than a few levels',
      });
      break;
    }
    const hint = 'YAML reads its structure from indentation, quotes and brackets: check this line and the one above it';
    out.push(explain(lines, error, at) ?? { ...at, code: 'config.yaml_syntax', message: parserWords(error), hint });
    break;
  }
  return out;
}

/** A key given twice: named, with the line it was first given on when that can be told. */
function duplicateKey(lines: Line[], at: { line: number; col: number }): SyntaxProblem {
  const here = lines[at.line - 1];
  const key = here ? /^\s*(?:-\s+)?("[^"]*"|'[^']*'|[^\s#:][^#:]*?)\s*:/.exec(here.text)?.[1] : undefined;
  let first: number | undefined;
  if (key !== undefined && here) {
    for (let i = at.line - 2; i >= 0; i--) {
      const line = lines[i]!;
      if (!line.content) continue;
      if (line.indent < here.indent) break;
      if (line.indent === here.indent && line.text.trimStart().startsWith(`${key}:`)) first = i + 1;
    }
  }
  const name = key === undefined ? 'this key' : `key ${key.startsWith('"') || key.startsWith("'") ? key : `"${key}"`}`;
  const message = `${name} appears twice in the same map${first ? ` (first on line ${first})` : ''}`;
  return { ...at, code: 'config.yaml_duplicate_key', message, hint: 'keep one of them' };
}

function parserWords(error: YAMLError): string {
  return error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

function explain(lines: Line[], error: YAMLError, at: { line: number; col: number }): SyntaxProblem | undefined {
  const index = at.line - 1;
  switch (error.code) {
    case 'TAB_AS_INDENT':
      return { line: at.line, col: 1, code: 'config.yaml_tab', message: 'this line is indented with a tab; YAML indents with spaces only', hint: TAB_HINT };
    case 'MISSING_CHAR':
      return unclosed(lines, error.pos[0]) ?? undefined;
    case 'BAD_INDENT':
      if (/^Flow (sequence|map)/.test(error.message)) return unclosed(lines, error.pos[0]);
      return mixedColumns(lines, index);
    case 'BLOCK_AS_IMPLICIT_KEY':
    case 'MULTILINE_IMPLICIT_KEY':
      return nestedUnderValue(lines, index);
    case 'UNEXPECTED_TOKEN': {
      const char = /"([\]}])"$/.exec(error.message.split('\n')[0]!)?.[1];
      if (char) {
        const [opener, what] = char === ']' ? ['[', 'list'] : ['{', 'map'];
        const message = `this ${char} closes nothing: no ${opener} is open here`;
        return { ...at, code: 'config.yaml_unopened', message, hint: `remove it, or open the ${what} it closes` };
      }
      const first = nextContent(lines, -1);
      if (first !== undefined && first < index && lines[first]!.indent > lines[index]!.indent) {
        const message = `the first key is ${indented(lines[first]!.indent)}, deeper than line ${index + 1}: the top level of a file starts at column 1`;
        return { line: first + 1, col: 1, code: 'config.yaml_indent', message, hint: 'remove the indentation of the top-level keys' };
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
