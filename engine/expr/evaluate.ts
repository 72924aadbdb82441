/**
 * Value expressions: the small, declarative language YAML uses to say where a value comes from.
 * A plain literal is itself; a map or list is evaluated member by member; a map with one `$`
 * operator is an expression:
 *
 *   {$field: path, default?}      a field of the root (proposal or record)
 *   {$arg: name, default?}        an event argument
 *   {$now: true}                  the operation's timestamp
 *   {$value: literal}             a literal, not evaluated
 *   {$count: path, where?: {k: v}}  how many items of a list (matching where)
 *   {$lookup: path, map: {...}}   the map entry for a field's value
 *   {$template: "…{{path}}…"}     a string rendered from the root
 *   {$hmac: secret, message: "…{{path}}…", length?: n}   hex HMAC-SHA256 keyed with a secret
 *   {$match: path, pattern: re, group?: n}               a regular expression's capture in a field
 *   {$pairs: path, line: re, item: re}                   "name range, name range" → {name: range}
 *   {$keys: expr}                 the keys of a map
 *   {$first: [expr, …]}           the first that yields a value
 *
 * Evaluation is pure: the clock and the secrets come in through the context.
 */
import { createHmac } from 'node:crypto';
import { cloneJson } from '../util/clone.js';
import { getPath, isObject } from '../util/json-path.js';
import { renderTemplate, templatePaths } from './template.js';

export interface ExprContext {
  root: unknown;
  /**
   * Copy values taken from the root, arguments and literals (default true). Off when the result
   * is only serialized (a pool entry, a ledger row): nothing will mutate it, and copying a whole
   * candidate per field is the bulk of the cost.
   */
  copy?: boolean;
  args?: Record<string, unknown>;
  now: string;
  secrets?: Readonly<Record<string, string>>;
}

export interface Evaluation {
  value: unknown;
  /** `$field` / `$arg` paths that had no value and no default. */
  missing: string[];
}

export const OPERATORS = ['$field', '$arg', '$now', '$value', '$count', '$lookup', '$template', '$hmac', '$match', '$pairs', '$keys', '$first'] as const;
export type Operator = (typeof OPERATORS)[number];

/** Options each operator accepts besides itself. */
export const OPERATOR_OPTIONS: Record<Operator, readonly string[]> = {
  $field: ['default'],
  $arg: ['default'],
  $now: [],
  $value: [],
  $count: ['where'],
  $lookup: ['map', 'default'],
  $template: [],
  $hmac: ['message', 'length'],
  $match: ['pattern', 'group'],
  $pairs: ['line', 'item'],
  $keys: [],
  $first: [],
};

/** The flags the engine compiles declared patterns with: `$match` and a `$pairs` line per line, `$pairs` items all. */
export const PATTERN_FLAGS = { match: 'm', line: 'm', item: 'g' } as const;

export function operatorOf(node: unknown): Operator | undefined {
  if (!isObject(node)) return undefined;
  const keys = Object.keys(node).filter((key) => key.startsWith('$'));
  return keys.length === 1 && (OPERATORS as readonly string[]).includes(keys[0]!) ? (keys[0] as Operator) : undefined;
}

export function evaluate(expr: unknown, context: ExprContext): Evaluation {
  const missing: string[] = [];
  const value = evaluateNode(expr, context, missing);
  return { value, missing };
}

function evaluateNode(node: unknown, context: ExprContext, missing: string[]): unknown {
  if (Array.isArray(node)) return node.map((item) => evaluateNode(item, context, missing)).filter((item) => item !== undefined);
  if (!isObject(node)) return node;
  const operator = operatorOf(node);
  if (!operator) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(node)) {
      const value = evaluateNode(child, context, missing);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }
  const argument = node[operator];
  switch (operator) {
    case '$field':
    case '$arg': {
      const path = String(argument);
      const value = operator === '$field' ? getPath(context.root, path) : getPath(context.args ?? {}, path);
      if (value !== undefined) return copyOf(value, context);
      if ('default' in node) return copyOf(node['default'], context);
      missing.push(operator === '$field' ? path : `--${path}`);
      return undefined;
    }
    case '$now':
      return context.now;
    case '$value':
      return copyOf(argument, context);
    case '$count': {
      const list = getPath(context.root, String(argument));
      if (!Array.isArray(list)) {
        missing.push(String(argument));
        return undefined;
      }
      const where = isObject(node['where']) ? node['where'] : undefined;
      return where ? list.filter((item) => isObject(item) && Object.entries(where).every(([key, value]) => item[key] === value)).length : list.length;
    }
    case '$lookup': {
      const key = getPath(context.root, String(argument));
      const map = isObject(node['map']) ? node['map'] : {};
      if (key !== undefined && Object.hasOwn(map, String(key))) return copyOf(map[String(key)], context);
      if ('default' in node) return copyOf(node['default'], context);
      missing.push(String(argument));
      return undefined;
    }
    case '$template':
      requireTemplatePaths(String(argument), context.root, missing);
      return renderTemplate(String(argument), context.root);
    case '$hmac': {
      const secret = context.secrets?.[String(argument)];
      if (secret === undefined) throw new Error(`secret "${String(argument)}" was not provided`);
      requireTemplatePaths(String(node['message'] ?? ''), context.root, missing);
      const message = renderTemplate(String(node['message'] ?? ''), context.root);
      const digest = hmacHex(secret, message);
      return typeof node['length'] === 'number' ? digest.slice(0, node['length']) : digest;
    }
    case '$match': {
      const text = getPath(context.root, String(argument));
      if (typeof text !== 'string') return undefined;
      const match = compiledPattern(String(node['pattern']), PATTERN_FLAGS.match).exec(text);
      const group = typeof node['group'] === 'number' ? node['group'] : 1;
      const value = match?.[group]?.trim();
      return value === undefined || value === '' ? undefined : value;
    }
    case '$pairs': {
      const text = getPath(context.root, String(argument));
      if (typeof text !== 'string') return undefined;
      const line = compiledPattern(String(node['line']), PATTERN_FLAGS.line).exec(text)?.[1];
      if (line === undefined) return undefined;
      const out: Record<string, string> = {};
      for (const match of line.matchAll(new RegExp(String(node['item']), PATTERN_FLAGS.item))) {
        if (match[1] !== undefined && match[2] !== undefined) out[match[1].trim()] = match[2].trim();
      }
      return Object.keys(out).length ? out : undefined;
    }
    case '$keys': {
      const value = evaluateNode(argument, context, missing);
      return isObject(value) ? Object.keys(value) : undefined;
    }
    case '$first': {
      for (const option of Array.isArray(argument) ? argument : []) {
        const value = evaluateNode(option, context, []);
        if (value !== undefined && value !== '') return value;
      }
      return undefined;
    }
  }
}

/**
 * HMACs already computed: a key and a message always give the same digest, and a batch keys the
 * same few messages again and again (one per value of a field that has a few). Bounded: a message
 * made of per-proposal fields just computes each time.
 */
const digests = new Map<string, string>();
function hmacHex(secret: string, message: string): string {
  const key = `${secret}\u0000${message}`;
  let digest = digests.get(key);
  if (digest === undefined) {
    digest = createHmac('sha256', secret).update(message).digest('hex');
    if (digests.size >= 256) digests.clear();
    digests.set(key, digest);
  }
  return digest;
}

/** Patterns of expressions, compiled once (they come from the configuration: a bounded set). */
const patterns = new Map<string, RegExp>();
function compiledPattern(source: string, flags: 'm'): RegExp {
  const key = `${flags}/${source}`;
  let regex = patterns.get(key);
  if (!regex) {
    regex = new RegExp(source, flags);
    patterns.set(key, regex);
  }
  return regex;
}

function copyOf(value: unknown, context: ExprContext): unknown {
  return context.copy === false || value === null || typeof value !== 'object' ? value : cloneJson(value);
}

function requireTemplatePaths(template: string, root: unknown, missing: string[]): void {
  for (const path of templatePaths(template)) if (path !== '' && getPath(root, path) === undefined) missing.push(path);
}

/** Names of the secrets an expression uses (read them before evaluating). */
export function secretsUsed(expr: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(expr)) for (const item of expr) secretsUsed(item, into);
  else if (isObject(expr)) {
    if (operatorOf(expr) === '$hmac') into.add(String(expr['$hmac']));
    for (const value of Object.values(expr)) secretsUsed(value, into);
  }
  return into;
}
