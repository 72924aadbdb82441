import type { Finding } from './describe-errors.js';

/** Schema findings on data (not a file) as lines: `message (at candidate.claim)`. */
export function formatFindings(findings: readonly Finding[], root?: string): string[] {
  return findings.map((finding) => {
    const where = [root, ...finding.path].filter((part) => part !== undefined && part !== '').join('.');
    return `${finding.message}${where ? ` (at ${where})` : ''}${finding.hint ? ` — ${finding.hint}` : ''}`;
  });
}
