/** Parse, interpolate and schema-check one YAML file, with positioned issues. Pure. */
import type { ValidateFunction } from 'ajv';
import type { Issue } from '../errors.js';
import type { Unreadable } from './config-file.js';
import { describeErrors } from './describe-errors.js';
import { interpolateSourceAt, type Env } from './interpolate.js';
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

export interface CheckOptions {
  /**
   * Whether a value whose variable is unset may be left out instead of failing the file: the path
   * of the part to drop (with the warning's words), or undefined when the value is needed.
   */
  tolerate?: (path: readonly string[]) => { drop: string[]; why: string } | undefined;
  /** The file already parsed (from this very text), to be used rather than parsed again. */
  parsed?: { source: SourceFile; issues: Issue[] };
}

export function checkYamlFile<T>(
  file: string,
  text: string | Unreadable | undefined,
  validate: ValidateFunction,
  env: Env,
  options: CheckOptions = {},
): CheckedFile<T> {
  if (text === undefined || typeof text !== 'string') {
    // A byte that is not UTF-8 is placed in the file itself; a file that cannot be read at all, on
    // the line that names it (see `relocateUnreadable`).
    if (text?.line !== undefined)
      return {
        issues: [
          {
            code: 'config.encoding',
            severity: 'error',
            file,
            line: text.line,
            col: text.col ?? 1,
            message: `cannot read ${file}: ${text.error}`,
            hint: 'save the file as UTF-8',
          },
        ],
      };
    return { issues: [{ code: 'config.unreadable', severity: 'error', file, message: `cannot read ${file}: ${text?.error ?? 'file not found'}` }] };
  }
  const { source, issues } = options.parsed ?? parseSource(file, text);
  if (issues.length) return { source, issues };
  const interpolation = interpolateSourceAt(source, env);
  const tolerated = interpolation.map((located) => ({ located, drop: located.unset ? options.tolerate?.(located.path) : undefined }));
  const warnings: Issue[] = tolerated.flatMap(({ located, drop }) =>
    drop ? [{ ...located.issue, severity: 'warning' as const, message: `${located.issue.message} ${drop.why}` }] : [],
  );
  const fatal = tolerated.filter(({ drop }) => !drop).map(({ located }) => located.issue);
  if (fatal.length) return { source, issues: [...fatal, ...warnings] };
  if (interpolation.length) {
    // Every problem is in a part that may be left out: leave those parts out and go on.
    source.data = source.doc.toJS({ maxAliasCount: 100 });
    for (const { drop } of tolerated) if (drop) removeAt(source.data, drop.drop);
  }
  if (source.data === null || typeof source.data !== 'object' || Array.isArray(source.data)) {
    return { source, issues: [{ code: 'config.not_a_map', severity: 'error', file, line: 1, col: 1, message: `${file} must hold a map of settings` }] };
  }
  const found = schemaIssues(source, validate, source.data);
  return { source, data: source.data as T, issues: [...warnings, ...found] };
}

function removeAt(data: unknown, path: readonly string[]): void {
  let node = data as Record<string, unknown> | undefined;
  for (const key of path.slice(0, -1)) node = node && typeof node === 'object' && Object.hasOwn(node, key) ? (node[key] as Record<string, unknown>) : undefined;
  const last = path[path.length - 1];
  if (node && typeof node === 'object' && last !== undefined && Object.hasOwn(node, last)) delete node[last];
}
