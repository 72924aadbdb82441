/**
 * Durations in pipeline.yaml become timers, and a Node timer holds at most 2^31-1 ms: a longer one
 * fires after 1 ms (TimeoutOverflowWarning), so `timeout: 2147484s` would time every call out at
 * once, and `claim_ttl: 0s` would renew leases in a busy loop. A duration is therefore at least
 * 1 ms and at most 24 hours. The schema checks the shape (a number of seconds or "30s"); this
 * checks the length it stands for, in either form, as one positioned error. Pure.
 */
import type { Issue } from '../errors.js';
import { isObject } from '../util/json-path.js';
import { parseDuration } from '../util/time.js';
import { issueAt, type SourceFile, writtenText } from './source.js';

export const MIN_DURATION_SECONDS = 0.001;
export const MAX_DURATION_SECONDS = 24 * 60 * 60;

/** The keys of pipeline.yaml whose values are durations (`definitions/duration` of pipeline.schema.json). */
export const DURATION_KEYS = { defaults: ['timeout', 'claim_ttl'], provider: ['timeout', 'retry_after_cap'] } as const;

/** The seconds a duration stands for; undefined for a value of another shape (the schema reports it). */
function seconds(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const parsed = parseDuration(value, Number.NaN);
  return Number.isFinite(parsed) ? parsed : undefined;
}

/** Every duration of pipeline.yaml (as loaded, `def`) outside [1 ms, 24 h], each at its line. */
export function checkDurations(def: unknown, source: SourceFile): Issue[] {
  if (!isObject(def)) return [];
  const places: { path: string[]; value: unknown }[] = [];
  const defaults = def['defaults'];
  if (isObject(defaults)) for (const key of DURATION_KEYS.defaults) places.push({ path: ['defaults', key], value: defaults[key] });
  const providers = def['providers'];
  if (isObject(providers)) {
    for (const [name, provider] of Object.entries(providers)) {
      if (isObject(provider)) for (const key of DURATION_KEYS.provider) places.push({ path: ['providers', name, key], value: provider[key] });
    }
  }
  const issues: Issue[] = [];
  for (const { path, value } of places) {
    const length = seconds(value);
    if (length === undefined || (length >= MIN_DURATION_SECONDS && length <= MAX_DURATION_SECONDS)) continue;
    const written = writtenText(source, path) ?? String(value);
    // A value from a ${VAR} is shown as written and as it came out.
    const got = written === String(value) ? written : `${written} (${String(value)})`;
    issues.push(
      issueAt(
        source,
        path,
        'config.duration_range',
        `${path[path.length - 1]} must be between 1ms and 24 hours (1440m), got ${got}`,
        'a duration of 0 ends at once, and a Node timer cannot wait longer than 2^31-1 ms (about 24.8 days)',
      ),
    );
  }
  return issues;
}
