/**
 * Turn ajv's errors into a short list of findings a person can act on: one finding per real
 * problem (the best-matching branch of anyOf/oneOf, no `if` noise), worded with the schema's own
 * `message` when it has one. Pure: positions are added by the caller.
 */
import type { ErrorObject } from 'ajv';
import { didYouMean, listWords } from '../util/suggest.js';
import { schemaMessage } from './ajv.js';

export interface Finding {
  path: string[];
  code: string;
  message: string;
  hint?: string;
  /** Blame the key (`criteria:`) rather than the value. */
  prefer: 'value' | 'key';
}

/** How a value is shown: the caller can supply the text exactly as written in the file. */
export type ShowValue = (path: string[], value: unknown) => string;

const defaultShow: ShowValue = (_path, value) =>
  typeof value === 'string' ? `"${value}"` : typeof value === 'number' && !Number.isFinite(value) ? String(value) : (JSON.stringify(value) ?? String(value));

/** The kind of a value that is not a number (numbers are quoted as written instead). */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'string') return 'a string';
  return `a ${typeof value}`;
}

function article(type: string): string {
  const names: Record<string, string> = {
    object: 'a map',
    array: 'a list',
    string: 'a string',
    number: 'a number',
    integer: 'an integer',
    boolean: 'true or false',
    null: 'null',
  };
  return names[type] ?? type;
}

function keyName(path: string[]): string {
  const last = path[path.length - 1];
  if (last === undefined) return 'the document';
  return /^\d+$/.test(last) ? `item ${Number(last) + 1} of ${path[path.length - 2] ?? 'the list'}` : last;
}

function decimals(text: string): number {
  const dot = text.indexOf('.');
  return dot < 0 ? 0 : text.length - dot - 1;
}

/** Keep, for each anyOf/oneOf, only the errors of the branch that fits the data's type. */
function reduceBranches(errors: ErrorObject[]): ErrorObject[] {
  const combinators = errors.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf');
  if (combinators.length === 0) return errors.filter((error) => error.keyword !== 'if');
  let kept = errors.filter((error) => error.keyword !== 'if');
  // Innermost first, so nested combinators are reduced before their parents look at them.
  const ordered = [...combinators].sort((a, b) => b.schemaPath.length - a.schemaPath.length);
  for (const combinator of ordered) {
    if (!kept.includes(combinator)) continue;
    const base = combinator.schemaPath;
    const inside = kept.filter(
      (error) => error !== combinator && error.schemaPath.startsWith(`${base}/`) && error.instancePath.startsWith(combinator.instancePath),
    );
    const branches = new Map<string, ErrorObject[]>();
    for (const error of inside) {
      const branch = error.schemaPath.slice(base.length + 1).split('/')[0]!;
      branches.set(branch, [...(branches.get(branch) ?? []), error]);
    }
    // A branch whose own root rejects the data's type (or its const/required shape) does not fit.
    const fitting = [...branches.entries()].filter(
      ([, list]) => !list.some((error) => error.instancePath === combinator.instancePath && (error.keyword === 'type' || error.keyword === 'const')),
    );
    if (fitting.length === 1 && combinator.keyword === 'anyOf') {
      kept = kept.filter((error) => error !== combinator && !(inside.includes(error) && !fitting[0]![1].includes(error)));
    } else {
      kept = kept.filter((error) => !inside.includes(error));
    }
  }
  return kept;
}

export function describeErrors(errors: readonly ErrorObject[] | null | undefined, show: ShowValue = defaultShow): Finding[] {
  if (!errors) return [];
  const findings: Finding[] = [];
  const seen = new Set<string>();
  for (const error of reduceBranches([...errors])) {
    const finding = describe(error, show);
    if (!finding) continue;
    const id = `${finding.path.join('/')}|${finding.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    findings.push(finding);
  }
  return findings;
}

function describe(error: ErrorObject, show: ShowValue): Finding | undefined {
  const path = parsePointer(error.instancePath);
  const key = keyName(path);
  const parent = error.parentSchema;
  const custom = schemaMessage(parent);
  const params = error.params as Record<string, unknown>;
  const value = error.data;
  switch (error.keyword) {
    case 'required': {
      const missing = String(params['missingProperty']);
      return { path, code: 'schema.required', message: `missing key "${missing}"${path.length ? ` in ${key}` : ''}`, prefer: 'key' };
    }
    case 'additionalProperties': {
      const extra = String(params['additionalProperty']);
      const allowed = Object.keys((parent?.['properties'] as Record<string, unknown> | undefined) ?? {});
      const hint = didYouMean(extra, allowed) ?? (allowed.length ? `allowed keys: ${allowed.join(', ')}` : undefined);
      return {
        path: [...path, extra],
        code: 'schema.unknown_key',
        message: `unknown key "${extra}"${path.length ? ` in ${key}` : ''}`,
        prefer: 'key',
        ...(hint ? { hint } : {}),
      };
    }
    case 'enum': {
      const allowed = ((error.schema as unknown[]) ?? []).map(String);
      const hint = typeof value === 'string' ? didYouMean(value, allowed) : undefined;
      return {
        path,
        code: 'schema.enum',
        message: `unknown ${key} ${show(path, value)} (expected ${listWords(allowed)})`,
        prefer: 'value',
        ...(hint ? { hint } : {}),
      };
    }
    case 'const':
      return { path, code: 'schema.const', message: custom ?? `${key} must be ${JSON.stringify(error.schema)}, got ${show(path, value)}`, prefer: 'value' };
    case 'type': {
      // A number that fails a number type is NaN or ±infinity (YAML's .nan, .inf) or, for an integer, a fraction:
      // "must be a number, got a number" would be false, so say which numbers are meant and quote the value as written.
      const finite = typeof value === 'number' && !Number.isFinite(value);
      const types = ([] as string[]).concat(error.schema as string | string[]);
      const expected = types.map((type) => (finite && type === 'number' ? 'a finite number' : article(type)));
      const got = typeof value === 'number' ? show(path, value) : typeName(value);
      return { path, code: 'schema.type', message: `${key} must be ${listWords(expected)}, got ${got}`, prefer: 'value' };
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const min = parent?.['minimum'];
      const max = parent?.['maximum'];
      const range =
        typeof min === 'number' && typeof max === 'number'
          ? `between ${min} and ${max}`
          : `${error.keyword.replace('exclusiveM', 'm').replace('minimum', 'at least').replace('maximum', 'at most')} ${String(error.schema)}`;
      return { path, code: 'schema.range', message: `${key} must be ${range}, got ${show(path, value)}`, prefer: 'value' };
    }
    case 'minItems':
    case 'minLength':
    case 'minProperties':
      if (custom) return { path, code: 'schema.pattern', message: `${key}: ${custom}`, prefer: 'value' };
      return {
        path,
        code: 'schema.empty',
        message:
          Number(error.schema) === 1
            ? `${key} must not be empty`
            : `${key} must have at least ${String(error.schema)} ${error.keyword === 'minLength' ? 'characters' : 'entries'}`,
        prefer: 'value',
      };
    case 'maxItems':
    case 'maxLength':
    case 'maxProperties':
      return {
        path,
        code: 'schema.too_long',
        message: `${key} must have at most ${String(error.schema)} ${error.keyword === 'maxLength' ? 'characters' : 'entries'}`,
        prefer: 'value',
      };
    case 'pattern':
    case 'format':
      return {
        path,
        code: 'schema.pattern',
        message: custom ? `${key} ${show(path, value)}: ${custom}` : `${key} ${show(path, value)} does not match ${String(error.schema)}`,
        prefer: 'value',
      };
    case 'propertyNames': {
      const name = String(params['propertyName']);
      return { path: [...path, name], code: 'schema.name', message: `invalid name "${name}"`, prefer: 'key' };
    }
    case 'not':
      return { path, code: 'schema.not', message: custom ? `${key}: ${custom}` : `${key} is not allowed here`, prefer: 'key' };
    case 'anyOf':
    case 'oneOf':
      return { path, code: 'schema.shape', message: custom ? `${key}: ${custom}` : `${key} does not have any of the allowed shapes`, prefer: 'key' };
    case 'uniqueItems':
      return { path, code: 'schema.unique', message: `${key} lists the same item twice`, prefer: 'value' };
    case 'uniqueProperty':
      return {
        path: [...path, String(params['index']), String(params['property'])],
        code: 'schema.duplicate',
        message: `duplicate ${String(params['property'])} "${String(params['value'])}" in ${key}`,
        prefer: 'value',
      };
    case 'keysListed': {
      const unknown = (params['unknown'] as string[]) ?? [];
      const keysPath = String(params['keys']).split('.');
      return {
        path: [...path, ...keysPath, unknown[0] ?? ''],
        code: 'schema.not_listed',
        message: `${keysPath[keysPath.length - 1]} names ${listWords(
          unknown.map((name) => `"${name}"`),
          'and',
        )}, which ${unknown.length === 1 ? 'is' : 'are'} not in ${String(params['in'])} (${listWords(((params['allowed'] as string[]) ?? []).map(String), 'and') || 'empty'})`,
        prefer: 'key',
      };
    }
    case 'sumEquals': {
      const items = Array.isArray(value) ? value : [];
      const property = String(params['property']);
      const written = items.map((_item, index) => show([...path, String(index), property], (items[index] as Record<string, unknown>)[property]));
      const places = Math.max(2, ...written.map(decimals));
      const label = typeof params['label'] === 'string' ? params['label'] : `${property}s`;
      return {
        path,
        code: 'schema.sum',
        message: `${label} sum to ${Number(params['sum']).toFixed(places)}, expected ${Number(params['expected']).toFixed(places)} (${written.join(' + ')})`,
        prefer: 'key',
      };
    }
    default:
      return { path, code: `schema.${error.keyword}`, message: custom ? `${key}: ${custom}` : `${key} ${error.message ?? 'is invalid'}`, prefer: 'value' };
  }
}

/** Split an ajv instancePath (`/criteria/1/weight`) into segments. */
function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}
