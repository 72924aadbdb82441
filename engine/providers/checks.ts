/**
 * `checks`: a deterministic judge declared in YAML. Each criterion scores the weighted share of
 * its checks that pass — a JSON Schema the proposal must satisfy, fields free of secrets, or
 * fields free of patterns. The judge's score is the mean of its criterion scores, and it passes
 * when that reaches `pass_at` (floors are the rubric's business, not the judge's).
 * Free and offline; it scores only the criteria of the rubric it serves.
 */
import { checkKey } from '../util/schema-keys.js';
import type { SchemaRegistry } from '../config/schema-registry.js';
import type { Check, ChecksProviderConfig } from '../config/types.js';
import { getPath } from '../util/json-path.js';
import { findSecrets, textsOf } from './secret-scan.js';
import { UNKNOWN_USAGE, type Provider, type ProviderRequest, type ProviderResult } from './types.js';

/** `absent` patterns are case-insensitive. */
export const ABSENT_FLAGS = 'i';

const compiledPatterns = new WeakMap<string[], RegExp[]>();

function compiled(patterns: string[]): RegExp[] {
  let regexes = compiledPatterns.get(patterns);
  if (!regexes) {
    regexes = patterns.map((pattern) => new RegExp(pattern, ABSENT_FLAGS));
    compiledPatterns.set(patterns, regexes);
  }
  return regexes;
}

function runCheck(check: Check, proposal: unknown, validate: () => (data: unknown) => boolean): boolean {
  if (check.schema !== undefined) return validate()(proposal) === true;
  if (check.secrets) return check.secrets.every((field) => textsOf(getPath(proposal, field)).every((text) => findSecrets(text).length === 0));
  if (check.absent) {
    const patterns = compiled(check.absent.patterns);
    return check.absent.fields.every((field) => textsOf(getPath(proposal, field)).every((text) => !patterns.some((pattern) => pattern.test(text))));
  }
  return true;
}

export function createChecksProvider(name: string, def: ChecksProviderConfig, schemas: SchemaRegistry): Provider {
  const passAt = def.pass_at ?? 0.7;
  return {
    name,
    kind: 'checks',
    paid: false,
    model: undefined,
    deterministic: true,
    async call(request: ProviderRequest): Promise<ProviderResult> {
      const proposal = request.input['proposal'];
      const criteria = (request.input['criteria'] as string[] | undefined) ?? Object.keys(def.criteria);
      const scores: Record<string, number> = {};
      const failures: string[] = [];
      for (const criterion of criteria) {
        const checks = def.criteria[criterion];
        if (!checks) continue;
        let total = 0;
        let passed = 0;
        checks.forEach((check, index) => {
          const weight = check.weight ?? 1;
          total += weight;
          if (runCheck(check, proposal, () => schemas.inline(checkKey(name, criterion, index)))) passed += weight;
          else failures.push(`${criterion}: ${check.description ?? `check ${index + 1}`}`);
        });
        scores[criterion] = total === 0 ? 1 : passed / total;
      }
      const values = Object.values(scores);
      const score = values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0;
      return {
        ok: true,
        value: {
          score,
          passed: score >= passAt - 1e-9,
          criterion_scores: scores,
          feedback_summary: failures.length ? `failed: ${failures.join('; ')}` : 'every check passed',
          confidence: 1,
        },
        usage: UNKNOWN_USAGE,
      };
    },
  };
}
