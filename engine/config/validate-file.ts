/** Parse, interpolate and schema-check one YAML file, with positioned issues. Pure. */
import type { ValidateFunction } from 'ajv';
import type { Issue } from '../errors.js';
import { describeErrors } from './describe-errors.js';
import { interpolateSource, type Env } from './interpolate.js';
import { issueAt, parseSource, writtenText, type SourceFile } from './source.js';

export interface CheckedFile<T> {
  source?: SourceFile;
  data?: T;
  issues: Issue[];
}

export function showFrom(source: SourceFile) {
  return (path: string[], value: unknown): string => {
    if (typeof value === 'string') return `"${value}"`;
    return writtenText(source, path) ?? JSON.stringify(value) ?? String(value);
  };
}

/** Schema findings as positioned issues in `source`. */
export function schemaIssues(source: SourceFile, validate: ValidateFunction, data: unknown, code = 'config.schema'): Issue[] {
  if (validate(data)) return [];
  return describeErrors(validate.errors, showFrom(source)).map((finding) =>
    issueAt(source, finding.path, `${code}.${finding.code.replace(/^schema\./, '')}`, finding.message, finding.hint, finding.prefer),
  );
}

export function checkYamlFile<T>(file: string, text: string | { error: string } | undefined, validate: ValidateFunction, env: Env): CheckedFile<T> {
  if (text === undefined || typeof text !== 'string') {
    return { issues: [{ code: 'config.unreadable', severity: 'error', file, message: `cannot read ${file}: ${text?.error ?? 'file not found'}` }] };
  }
  const { source, issues } = parseSource(file, text);
  if (issues.length) return { source, issues };
  const interpolation = interpolateSource(source, env);
  if (interpolation.length) return { source, issues: interpolation };
  if (source.data === null || typeof source.data !== 'object' || Array.isArray(source.data)) {
    return { source, issues: [{ code: 'config.not_a_map', severity: 'error', file, line: 1, col: 1, message: `${file} must hold a map of settings` }] };
  }
  const found = schemaIssues(source, validate, source.data);
  return { source, data: source.data as T, issues: found };
}
