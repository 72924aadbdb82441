/**
 * A parsed YAML file that remembers where every value came from, so that any later check —
 * schema, cross-file rule, interpolation — can report `file:line:col`.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node, type Pair } from 'yaml';
import type { Issue } from '../errors.js';
import { describeSyntax } from './yaml-syntax.js';

export interface SourceFile {
  /** Path as shown to the user (relative to the pipeline directory). */
  file: string;
  text: string;
  doc: Document.Parsed;
  lines: LineCounter;
  /** The plain data, after interpolation. */
  data: unknown;
}

export type JsonPointer = readonly (string | number)[];

/** For tests: how many files `parseSource` has parsed in this process. */
export const sourceParses = { count: 0 };

/** Parse YAML text. Syntax errors come back as positioned issues; `data` is undefined then. */
export function parseSource(file: string, text: string): { source: SourceFile; issues: Issue[] } {
  sourceParses.count++;
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true });
  // The line that is wrong, in plain words, and nothing the parser said after losing its way.
  const issues: Issue[] = describeSyntax(text, doc.errors, (offset) => lines.linePos(offset)).map((problem) => ({
    code: problem.code,
    severity: 'error',
    file,
    line: problem.line,
    col: problem.col,
    message: problem.message,
    ...(problem.hint ? { hint: problem.hint } : {}),
  }));
  const source: SourceFile = { file, text, doc, lines, data: undefined };
  if (issues.length === 0) {
    try {
      source.data = doc.toJS({ maxAliasCount: 100 });
    } catch (error) {
      // An alias to no anchor, or an alias bomb: yaml throws while building the data.
      let at = { line: 1, col: 1 };
      visit(doc, {
        Alias: (_key, node) => {
          if (node.range) at = lines.linePos(node.range[0]);
          return visit.BREAK;
        },
      });
      issues.push({ code: 'config.yaml_alias', severity: 'error', file, line: at.line, col: at.col, message: (error as Error).message });
    }
  }
  return { source, issues };
}

interface Located {
  pair?: Pair;
  node?: Node;
}

function locate(source: SourceFile, path: JsonPointer): Located {
  let node: unknown = source.doc.contents;
  let pair: Pair | undefined;
  for (const segment of path) {
    if (isMap(node)) {
      const found = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(segment));
      if (!found) return { pair, node: node as Node };
      pair = found as Pair;
      node = found.value;
    } else if (isSeq(node)) {
      const index = Number(segment);
      const item = node.items[index];
      if (item === undefined) return { pair, node: node as Node };
      pair = undefined;
      node = item;
    } else {
      return { pair, node: node as Node | undefined };
    }
  }
  return { pair, node: node as Node | undefined };
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as { range?: [number, number, number] } | undefined)?.range;
  return range ? range[0] : undefined;
}

/**
 * The position of the value at `path`: a scalar points at itself, a map or list at its key
 * (so `criteria:` is blamed for a bad weight sum, `kind: jduge` at the value).
 */
export function positionOf(source: SourceFile, path: JsonPointer, prefer: 'value' | 'key' = 'value'): { line: number; col: number } {
  const { pair, node } = locate(source, path);
  let offset: number | undefined;
  if (prefer === 'key' && pair) offset = rangeStart(pair.key);
  else if (isScalar(node)) offset = rangeStart(node);
  else if (pair) offset = rangeStart(pair.key);
  else offset = rangeStart(node);
  if (offset === undefined) return { line: 1, col: 1 };
  return source.lines.linePos(offset);
}

/** The text of the value at `path` exactly as written in the file (`0.30`, not `0.3`). */
export function writtenText(source: SourceFile, path: JsonPointer): string | undefined {
  const { node } = locate(source, path);
  if (!isScalar(node) || !node.range) return undefined;
  return source.text.slice(node.range[0], node.range[1]).trim();
}

/** Does the path exist in the document (as opposed to stopping at a parent)? */
export function pathExists(source: SourceFile, path: JsonPointer): boolean {
  let node: unknown = source.doc.contents;
  for (const segment of path) {
    if (isMap(node)) {
      const found = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(segment));
      if (!found) return false;
      node = found.value;
    } else if (isSeq(node)) {
      node = node.items[Number(segment)];
      if (node === undefined) return false;
    } else return false;
  }
  return true;
}

export function issueAt(source: SourceFile, path: JsonPointer, code: string, message: string, hint?: string, prefer: 'value' | 'key' = 'value'): Issue {
  const at = positionOf(source, path, prefer);
  return { code, severity: 'error', file: source.file, line: at.line, col: at.col, message, ...(hint ? { hint } : {}) };
}
