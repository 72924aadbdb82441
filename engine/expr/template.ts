/** `{{path}}` templates for prompts and messages. Pure. */
import { getPath } from '../util/json-path.js';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_$.-]*)\s*\}\}/g;

/** A value as template text: strings as they are, other values as pretty JSON, missing as ''. */
function valueText(scope: unknown, path: string): string {
  const value = path === '' || path === '.' ? scope : getPath(scope, path);
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value, null, 2);
}

/** Render a template against `scope`: strings as they are, other values as pretty JSON, missing as ''. */
export function renderTemplate(template: string, scope: unknown): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => valueText(scope, path));
}

/** `<` `/` with only whitespace between: the start of any closing tag, however it is spaced. */
export const CLOSING_TAG = /<(\s*)\//g;

/**
 * Neutralise closing tags in text that goes between a prompt's delimiters: `</x` becomes `<\/x`,
 * so an interpolated value can never close the tag the template wrapped it in. `\/` is JSON's own
 * escape for `/`, so a value rendered as JSON stays valid JSON with the same meaning; nothing else
 * changes (`<6`, `a < b` and code samples are left as written).
 */
export function neutraliseClosingTags(text: string): string {
  return text.replace(CLOSING_TAG, '<$1\\/');
}

/**
 * Render a prompt template: like renderTemplate, but every interpolated value has its closing
 * tags neutralised, because values (proposals, records) are untrusted data and the template's
 * `<tag>…</tag>` around them is what tells the model where the data ends.
 */
export function renderPrompt(template: string, scope: unknown): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => neutraliseClosingTags(valueText(scope, path)));
}

/** The paths a template reads. */
export function templatePaths(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((match) => match[1]!);
}
