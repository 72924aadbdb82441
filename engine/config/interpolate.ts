/**
 * `${VAR}` and `${VAR:-default}` in YAML string values (defaults may nest: `${A:-${B}/x}`).
 * `$${` writes a literal `${`. An unset variable without a default is a positioned error.
 * Prompt templates use `{{path}}`, so the two syntaxes never collide.
 */
import { isPair, isScalar, isSeq, visit, type Scalar } from 'yaml';
import type { Issue } from '../errors.js';
import type { SourceFile } from './source.js';

export type Env = Readonly<Record<string, string | undefined>>;

export class InterpolationError extends Error {
  constructor(
    message: string,
    readonly hint = 'set the variable, or give a default with ${NAME:-default}',
    /** An unset variable (the environment's doing), rather than a mistake in the text. */
    readonly unset = false,
  ) {
    super(message);
  }
}

/**
 * How deep defaults may nest (`${A:-${B:-x}}` is 2). Real configuration uses two or three levels;
 * thousands are an accident or an attack, and each level costs a scan and a stack frame.
 */
export const MAX_NESTING = 32;

/** Expand one string. Throws InterpolationError naming the unset variable, or the nesting that is too deep. */
export function interpolate(text: string, env: Env): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (text.startsWith('${', i)) {
      const end = matchingBrace(text, i + 2);
      if (end < 0) throw new InterpolationError(`the "\${" in ${quote(text)} is never closed`, 'close it with "}", or write "$${" for a literal "${"');
      out += expand(text.slice(i + 2, end), env);
      i = end + 1;
      continue;
    }
    out += text[i];
    i++;
  }
  return out;
}

/** The index of the `}` closing the `${` opened just before `from`, or -1. Bounds the nesting, so expansion recurses at most MAX_NESTING deep. */
function matchingBrace(text: string, from: number): number {
  let depth = 1;
  for (let i = from; i < text.length; i++) {
    if (text.startsWith('${', i)) {
      depth++;
      if (depth > MAX_NESTING) {
        const hint = `nest defaults at most ${MAX_NESTING} levels deep`;
        throw new InterpolationError(`"\${…}" nested more than ${MAX_NESTING} levels deep in ${quote(text)}`, hint);
      }
      i++;
    } else if (text[i] === '}') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** A value quoted in a message: hostile text may be megabytes long, so only its start is shown. */
function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}

function expand(body: string, env: Env): string {
  const sep = body.indexOf(':-');
  const name = sep < 0 ? body : body.slice(0, sep);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new InterpolationError(`${quote(`\${${body}}`)} is not a variable reference (use \${NAME} or \${NAME:-default})`);
  }
  // Own variables only: `\${constructor}` must not find Object.prototype's.
  const value = Object.hasOwn(env, name) ? env[name] : undefined;
  if (value !== undefined && value !== '') return value;
  if (sep >= 0) return interpolate(body.slice(sep + 2), env);
  throw new InterpolationError(`environment variable ${name} is not set`, undefined, true);
}

/** An interpolation problem and the path of the value it is in (`providers.ollama.base_url`). */
export interface LocatedIssue {
  issue: Issue;
  path: string[];
  /** An unset variable, as opposed to a mistake in the text. */
  unset: boolean;
}

/** The keys leading to a node, from the ancestors `visit` hands a visitor. */
function keyPath(ancestors: readonly unknown[], node: unknown): string[] {
  const out: string[] = [];
  const chain = [...ancestors, node];
  chain.forEach((item, index) => {
    if (isPair(item) && isScalar(item.key)) out.push(String(item.key.value));
    else if (isSeq(item)) out.push(String(item.items.indexOf(chain[index + 1] as never)));
  });
  return out;
}

/**
 * Interpolate every string scalar of a parsed file in place; return each problem with its path.
 * A value that cannot be interpolated keeps its text; the data is rebuilt only when all could.
 */
export function interpolateSourceAt(source: SourceFile, env: Env): LocatedIssue[] {
  const found: LocatedIssue[] = [];
  visit(source.doc, {
    Scalar(key, node: Scalar, ancestors) {
      if (key === 'key' || typeof node.value !== 'string' || !node.value.includes('$')) return;
      try {
        node.value = interpolate(node.value, env);
      } catch (error) {
        if (!(error instanceof InterpolationError)) throw error;
        const at = source.lines.linePos(node.range?.[0] ?? 0);
        const issue: Issue = { code: 'config.interpolation', severity: 'error', file: source.file, ...at, message: error.message, hint: error.hint };
        found.push({ issue, path: keyPath(ancestors, node), unset: error.unset });
      }
    },
  });
  if (found.length === 0 && source.doc.errors.length === 0) source.data = source.doc.toJS({ maxAliasCount: 100 });
  return found;
}

/** Interpolate every string scalar of a parsed file in place; return the issues. */
export function interpolateSource(source: SourceFile, env: Env): Issue[] {
  return interpolateSourceAt(source, env).map((located) => located.issue);
}
