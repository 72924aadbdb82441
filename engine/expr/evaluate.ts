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
import { isObject, splitPath } from '../util/json-path.js';
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
  const value = compiled(expr)(context, missing);
  return { value, missing };
}

/** An expression made into a function once: what evaluating it looks up is decided when it is compiled. */
type Compiled = (context: ExprContext, missing: string[]) => unknown;

/**
 * Expressions come from the configuration, which is never changed once loaded: each is compiled
 * the first time it is evaluated and kept as long as the configuration object is. A run evaluates
 * the same few expressions for every proposal (a pool entry, a ledger row, a status change).
 */
const compiledExpressions = new WeakMap<object, Compiled>();

function compiled(node: unknown): Compiled {
  if (node === null || typeof node !== 'object') return () => node;
  let fn = compiledExpressions.get(node);
  if (!fn) {
    fn = compile(node);
    compiledExpressions.set(node, fn);
  }
  return fn;
}

function compile(node: object): Compiled {
  if (Array.isArray(node)) {
    const items = node.map(compiled);
    return (context, missing) => {
      const out: unknown[] = [];
      for (const item of items) {
        const value = item(context, missing);
        if (value !== undefined) out.push(value);
      }
      return out;
    };
  }
  const record = node as Record<string, unknown>;
  const operator = operatorOf(record);
  if (!operator) {
    const members = Object.entries(record).map(([key, child]) => [key, compiled(child)] as const);
    return (context, missing) => {
      const out: Record<string, unknown> = {};
      for (const [key, member] of members) {
        const value = member(context, missing);
        if (value !== undefined) out[key] = value;
      }
      return out;
    };
  }
  const argument = record[operator];
  switch (operator) {
    case '$field':
    case '$arg': {
      const path = String(argument);
      const read = pathReader(path);
      const hasDefault = 'default' in record;
      const fallback = record['default'];
      const name = operator === '$field' ? path : `--${path}`;
      const field = operator === '$field';
      return (context, missing) => {
        const value = read(field ? context.root : (context.args ?? {}));
        if (value !== undefined) return copyOf(value, context);
        if (hasDefault) return copyOf(fallback, context);
        missing.push(name);
        return undefined;
      };
    }
    case '$now':
      return (context) => context.now;
    case '$value':
      return (context) => copyOf(argument, context);
    case '$count': {
      const path = String(argument);
      const read = pathReader(path);
      const where = isObject(record['where']) ? Object.entries(record['where']) : undefined;
      return (context, missing) => {
        const list = read(context.root);
        if (!Array.isArray(list)) {
          missing.push(path);
          return undefined;
        }
        return where ? list.filter((item) => isObject(item) && where.every(([key, value]) => item[key] === value)).length : list.length;
      };
    }
    case '$lookup': {
      const path = String(argument);
      const read = pathReader(path);
      const map = isObject(record['map']) ? record['map'] : {};
      const hasDefault = 'default' in record;
      const fallback = record['default'];
      return (context, missing) => {
        const key = read(context.root);
        if (key !== undefined && Object.hasOwn(map, String(key))) return copyOf(map[String(key)], context);
        if (hasDefault) return copyOf(fallback, context);
        missing.push(path);
        return undefined;
      };
    }
    case '$template': {
      const template = String(argument);
      const required = requiredPaths(template);
      return (context, missing) => {
        required(context.root, missing);
        return renderTemplate(template, context.root);
      };
    }
    case '$hmac': {
      const name = String(argument);
      const message = String(record['message'] ?? '');
      const required = requiredPaths(message);
      const length = typeof record['length'] === 'number' ? record['length'] : undefined;
      return (context, missing) => {
        const secret = context.secrets?.[name];
        if (secret === undefined) throw new Error(`secret "${name}" was not provided`);
        required(context.root, missing);
        const digest = hmacHex(secret, renderTemplate(message, context.root));
        return length === undefined ? digest : digest.slice(0, length);
      };
    }
    case '$match': {
      const read = pathReader(String(argument));
      const pattern = String(record['pattern']);
      const group = typeof record['group'] === 'number' ? record['group'] : 1;
      return (context) => {
        const text = read(context.root);
        if (typeof text !== 'string') return undefined;
        const value = compiledPattern(pattern, PATTERN_FLAGS.match).exec(text)?.[group]?.trim();
        return value === undefined || value === '' ? undefined : value;
      };
    }
    case '$pairs': {
      const read = pathReader(String(argument));
      const linePattern = String(record['line']);
      const itemPattern = String(record['item']);
      return (context) => {
        const text = read(context.root);
        if (typeof text !== 'string') return undefined;
        const line = compiledPattern(linePattern, PATTERN_FLAGS.line).exec(text)?.[1];
        if (line === undefined) return undefined;
        const out: Record<string, string> = {};
        for (const match of line.matchAll(new RegExp(itemPattern, PATTERN_FLAGS.item))) {
          // The names come from the text (a source record's): a name like `__proto__` is defined as
          // the map's own key, as JSON.parse makes it, not assigned (which would set the prototype).
          if (match[1] !== undefined && match[2] !== undefined)
            Object.defineProperty(out, match[1].trim(), { value: match[2].trim(), writable: true, enumerable: true, configurable: true });
        }
        return Object.keys(out).length ? out : undefined;
      };
    }
    case '$keys': {
      const inner = compiled(argument);
      return (context, missing) => {
        const value = inner(context, missing);
        return isObject(value) ? Object.keys(value) : undefined;
      };
    }
    case '$first': {
      const options = (Array.isArray(argument) ? argument : []).map(compiled);
      return (context) => {
        for (const option of options) {
          const value = option(context, []);
          if (value !== undefined && value !== '') return value;
        }
        return undefined;
      };
    }
  }
}

/** `getPath` for one path, split once. */
function pathReader(path: string): (root: unknown) => unknown {
  const keys = splitPath(path).map((key) => ({ key, index: /^\d+$/.test(key) ? Number(key) : undefined }));
  return (root) => {
    let node = root;
    for (const { key, index } of keys) {
      if (Array.isArray(node) && index !== undefined) node = node[index];
      else if (isObject(node) && Object.hasOwn(node, key)) node = node[key];
      else return undefined;
    }
    return node;
  };
}

/** The check that every path a template reads has a value (each missing one is recorded). */
function requiredPaths(template: string): (root: unknown, missing: string[]) => void {
  const readers = templatePaths(template)
    .filter((path) => path !== '')
    .map((path) => [path, pathReader(path)] as const);
  return (root, missing) => {
    for (const [path, read] of readers) if (read(root) === undefined) missing.push(path);
  };
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

/** Names of the secrets an expression uses (read them before evaluating); found once per expression. */
const secretNames = new WeakMap<object, ReadonlySet<string>>();
export function secretsUsed(expr: unknown): ReadonlySet<string> {
  if (expr === null || typeof expr !== 'object') return new Set();
  let names = secretNames.get(expr);
  if (!names) {
    names = collectSecrets(expr, new Set());
    secretNames.set(expr, names);
  }
  return names;
}

function collectSecrets(expr: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(expr)) for (const item of expr) collectSecrets(item, into);
  else if (isObject(expr)) {
    if (operatorOf(expr) === '$hmac') into.add(String(expr['$hmac']));
    for (const value of Object.values(expr)) collectSecrets(value, into);
  }
  return into;
}
