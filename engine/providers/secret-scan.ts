/**
 * A credential and secret scanner: well-known token formats plus `key = value` assignments of
 * long opaque values. Used by `checks` providers (e.g. for a criterion about leaking secrets). Pure.
 */
export interface SecretPattern {
  name: string;
  pattern: RegExp;
}

/**
 * Every pattern runs in linear time on untrusted text: no quantifier is unbounded where another
 * quantifier over the same characters follows it (SPEC §6), so no input makes them backtrack
 * over a long run from every start position. Token bodies are capped at 255 characters, schemes at
 * 32, URL user-info parts at 256 (longer runs are not the formats these patterns describe). A
 * trailing `{n,}` with nothing after it stays: it never gives back what it took, so it cannot
 * backtrack, and it covers the whole secret when the patterns are used to mask one.
 */
export const SECRET_PATTERNS: readonly SecretPattern[] = [
  { name: 'private key block', pattern: /-----BEGIN [A-Z ]{0,40}PRIVATE KEY( BLOCK)?-----/ },
  { name: 'AWS access key id', pattern: /\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b/ },
  { name: 'GitHub token', pattern: /\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/ },
  { name: 'GitLab token', pattern: /\bglpat-[A-Za-z0-9_-]{20,255}\b/ },
  { name: 'Slack token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,255}\b/ },
  { name: 'Slack webhook', pattern: /hooks\.slack\.com\/services\/T[A-Za-z0-9_]{1,64}\/B[A-Za-z0-9_]{1,64}\/[A-Za-z0-9_]{1,64}/ },
  { name: 'OpenAI or Anthropic key', pattern: /\bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,255}\b/ },
  { name: 'Stripe key', pattern: /\b[rs]k_(live|test)_[0-9A-Za-z]{16,255}\b/ },
  { name: 'Google API key', pattern: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { name: 'npm token', pattern: /\bnpm_[A-Za-z0-9]{36}\b/ },
  { name: 'JSON Web Token', pattern: /\beyJ[A-Za-z0-9_-]{8,1024}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,}/ },
  { name: 'credentials in a URL', pattern: /\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s/:@]{1,256}:[^\s/@]{1,256}@/i },
  {
    name: 'secret assignment',
    pattern: /\b(api[_-]?key|secret|token|passw(or)?d|pwd|auth|credential|access[_-]?key)\b["']?\s{0,64}[:=]\s{0,64}["']?[A-Za-z0-9/+_.=-]{12,}/i,
  },
];

/** The names of the secret kinds found in `text` (empty when clean). */
export function findSecrets(text: string): string[] {
  return SECRET_PATTERNS.filter((secret) => secret.pattern.test(text)).map((secret) => secret.name);
}

const MASK = '***';
const maskingPatterns = SECRET_PATTERNS.map((secret) => new RegExp(secret.pattern.source, `${secret.pattern.flags.replace('g', '')}g`));
/** A long opaque run of letters and digits: key-shaped even when its format is not known here. */
export const OPAQUE_RUN = /[A-Za-z0-9_-]{32,}/g;

/**
 * `text` with anything key-shaped replaced by `***`: every secret format above, and any opaque run
 * of 32 or more letters, digits, `_` or `-` that mixes letters and digits. For text that is printed
 * (provider error bodies, library messages); linear like the patterns it uses.
 */
export function maskSecrets(text: string): string {
  let masked = text;
  for (const pattern of maskingPatterns) masked = masked.replace(pattern, MASK);
  return masked.replace(OPAQUE_RUN, (run) => (/[0-9]/.test(run) && /[A-Za-z]/.test(run) ? MASK : run));
}

/** Strings inside a value (a string, or strings nested in lists and maps). */
export function textsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(textsOf);
  if (value && typeof value === 'object') return Object.values(value).flatMap(textsOf);
  return [];
}
