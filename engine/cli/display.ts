/**
 * How a proposal's field reads in the review walk. A field is shown by generic rules — a string
 * as it is, a list as `a, b`, a map as `name value, name value` — or by the `format` its walk entry
 * declares in the stage YAML: a `{{path}}` template over the value, or one template per value of
 * a discriminating field (`by: kind`). Nothing here knows what the fields mean. Pure; the text is
 * escaped where it leaves (Output).
 */
import type { WalkFormat } from '../config/types.js';
import { getPath, isObject } from '../util/json-path.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../util/nesting.js';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_$.-]*)\s*\}\}/g;

const isScalar = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);

/** A value as a person reads it, by the generic rules. */
export function displayValue(value: unknown): string {
  if (value === undefined || value === null) return '—';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (nestsDeeperThan(value, MAX_PRINT_DEPTH)) return `(nested more than ${MAX_PRINT_DEPTH} levels deep; not shown)`;
  if (Array.isArray(value)) return value.every(isScalar) ? value.map(displayValue).join(', ') : JSON.stringify(value);
  if (isObject(value) && Object.values(value).every(isScalar)) {
    const entries = Object.entries(value);
    return entries.length ? entries.map(([name, item]) => `${name} ${displayValue(item)}`).join(', ') : '—';
  }
  return JSON.stringify(value);
}

/** Fill a `{{path}}` template from `value` (`{{}}` is the value itself), each piece by the generic rules. */
function fill(template: string, value: unknown): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => displayValue(path === '' || path === '.' ? value : getPath(value, path)));
}

/** A field's text: its declared format when one applies, else the generic rules. */
export function displayField(value: unknown, format?: WalkFormat): string {
  if (format === undefined || value === undefined || value === null || nestsDeeperThan(value, MAX_PRINT_DEPTH)) return displayValue(value);
  if (typeof format === 'string') return fill(format, value);
  const key = getPath(value, format.by);
  const template = typeof key === 'string' && Object.hasOwn(format.cases, key) ? format.cases[key] : format.default;
  return template === undefined ? displayValue(value) : fill(template, value);
}
