/** The end-of-run summary (SPEC §7): counts per outcome, ids left unjudged or refused, tokens. */
import { EXIT, type ExitCode } from '../errors.js';
import type { Usage } from '../jury/verdict.js';

export interface Summary {
  stage: string;
  counts: Record<string, number>;
  /** Left as they were, to be retried: unjudged proposals, untouched source records. */
  unjudged: string[];
  refused: string[];
  tokens: Usage;
  /** Calls that reported no usage (their tokens are unknown, not zero). */
  callsWithoutUsage: number;
  interrupted: boolean;
  /** What the retry list is called in text (`could not be judged`, `left untouched`). */
  retryLabel: string;
  /** Per outcome, `<key>  <why>` for the ones worth listing (a rejection and its reason). */
  listed: Record<string, string[]>;
  /** What a stage's follow-up did along the way (`then: promote` after each verdict): its name and counts. */
  then?: { stage: string; counts: Record<string, number> };
}

export function emptySummary(stage: string, outcomes: readonly string[], retryLabel = 'left for a retry'): Summary {
  return {
    stage,
    retryLabel,
    counts: Object.fromEntries(outcomes.map((outcome) => [outcome, 0])),
    unjudged: [],
    refused: [],
    tokens: { tokens_in: null, tokens_out: null },
    callsWithoutUsage: 0,
    interrupted: false,
    listed: {},
  };
}

export function count(summary: Summary, outcome: string): void {
  summary.counts[outcome] = (summary.counts[outcome] ?? 0) + 1;
}

/** Add one call's usage: known numbers are summed, unknown ones are counted apart — never as 0. */
export function addUsage(summary: Summary, usage: Usage): void {
  if (usage.tokens_in === null && usage.tokens_out === null) summary.callsWithoutUsage++;
  if (usage.tokens_in !== null) summary.tokens.tokens_in = (summary.tokens.tokens_in ?? 0) + usage.tokens_in;
  if (usage.tokens_out !== null) summary.tokens.tokens_out = (summary.tokens.tokens_out ?? 0) + usage.tokens_out;
}

export function exitCodeOfRun(summaries: readonly Summary[]): ExitCode {
  if (summaries.some((summary) => summary.interrupted)) return EXIT.interrupted;
  if (summaries.some((summary) => summary.refused.length)) return EXIT.refused;
  if (summaries.some((summary) => summary.unjudged.length)) return EXIT.unjudged;
  return EXIT.ok;
}

export function summaryJson(summary: Summary): { stage: string; counts: Record<string, number>; unjudged: string[]; refused: string[]; tokens: Usage } {
  return { stage: summary.stage, counts: summary.counts, unjudged: summary.unjudged, refused: summary.refused, tokens: summary.tokens };
}

/** Text lines: one line of counts, then the ids that need attention, then tokens. */
export function summaryLines(summary: Summary, unjudgedLabel = summary.retryLabel): string[] {
  const counts = Object.entries(summary.counts).map(([outcome, n]) => `${n} ${outcome === 'unjudged' ? unjudgedLabel : outcome.replace(/_/g, ' ')}`);
  const lines = [`${summary.stage}: ${counts.join(', ') || 'nothing to do'}${summary.interrupted ? ' (interrupted)' : ''}`];
  for (const [outcome, rows] of Object.entries(summary.listed)) {
    if (rows.length) lines.push(`  ${outcome.replace(/_/g, ' ')}:`, ...[...rows].sort().map((row) => `    ${row}`));
  }
  if (summary.then) {
    const counts = Object.entries(summary.then.counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([outcome, n]) => `${n} ${outcome.replace(/_/g, ' ')}`);
    if (counts.length) lines.push(`  then ${summary.then.stage}: ${counts.join(', ')}`);
  }
  if (summary.unjudged.length) lines.push(`  ${unjudgedLabel} (left as they are; run again to retry): ${summary.unjudged.join(', ')}`);
  if (summary.refused.length) lines.push(`  refused: ${summary.refused.join(', ')}`);
  const { tokens_in, tokens_out } = summary.tokens;
  if (tokens_in !== null || tokens_out !== null || summary.callsWithoutUsage) {
    const known = tokens_in !== null || tokens_out !== null ? `${tokens_in ?? 'unknown'} in, ${tokens_out ?? 'unknown'} out` : 'not reported';
    lines.push(
      `  tokens: ${known}${summary.callsWithoutUsage ? ` (${summary.callsWithoutUsage} call${summary.callsWithoutUsage === 1 ? '' : 's'} reported no usage)` : ''}`,
    );
  }
  return lines;
}
