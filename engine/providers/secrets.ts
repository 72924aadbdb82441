/**
 * A credential and secret scanner: well-known token formats plus `key = value` assignments of
 * long opaque values. Used by `checks` providers (e.g. for a criterion about leaking secrets). Pure.
 */
export interface SecretPattern {
  name: string;
  pattern: RegExp;
}

export const SECRET_PATTERNS: readonly SecretPattern[] = [
  { name: 'private key block', pattern: /-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----/ },
  { name: 'AWS access key id', pattern: /\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b/ },
  { name: 'GitHub token', pattern: /\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b/ },
  { name: 'GitLab token', pattern: /\bglpat-[A-Za-z0-9_-]{20,}\b/ },
  { name: 'Slack token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/ },
  { name: 'Slack webhook', pattern: /hooks\.slack\.com\/services\/T[A-Za-z0-9_]+\/B[A-Za-z0-9_]+\/[A-Za-z0-9_]+/ },
  { name: 'OpenAI or Anthropic key', pattern: /\bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,}\b/ },
  { name: 'Stripe key', pattern: /\b[rs]k_(live|test)_[0-9A-Za-z]{16,}\b/ },
  { name: 'Google API key', pattern: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { name: 'npm token', pattern: /\bnpm_[A-Za-z0-9]{36}\b/ },
  { name: 'JSON Web Token', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/ },
  { name: 'credentials in a URL', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/@]+@/i },
  {
    name: 'secret assignment',
    pattern: /\b(api[_-]?key|secret|token|passw(or)?d|pwd|auth|credential|access[_-]?key)\b["']?\s*[:=]\s*["']?[A-Za-z0-9/+_.=-]{12,}/i,
  },
];

/** The names of the secret kinds found in `text` (empty when clean). */
export function findSecrets(text: string): string[] {
  return SECRET_PATTERNS.filter((secret) => secret.pattern.test(text)).map((secret) => secret.name);
}

/** Strings inside a value (a string, or strings nested in lists and maps). */
export function textsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(textsOf);
  if (value && typeof value === 'object') return Object.values(value).flatMap(textsOf);
  return [];
}
