/** `{{path}}` templates for prompts and messages. Pure. */
import { getPath } from '../util/json-path.js';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_$.-]*)\s*\}\}/g;

/** Render a template against `scope`: strings as they are, other values as pretty JSON, missing as ''. */
export function renderTemplate(template: string, scope: unknown): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => {
    const value = path === '' || path === '.' ? scope : getPath(scope, path);
    if (value === undefined || value === null) return '';
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    return JSON.stringify(value, null, 2);
  });
}

/** The paths a template reads. */
export function templatePaths(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((match) => match[1]!);
}
