/** Text layout for help and summaries: two-column tables wrapped to a width. Pure. */
import { wrapHanging } from '../util/wrap.js';

/** Help is written for a terminal of this width; it goes to stdout, which may be a file. */
export const HELP_WIDTH = 80;
/** Labels wider than this put their text on the next line. */
const MAX_LABEL = 26;

/** Rows of a two-column table (label, text), indented by two, the text wrapped under its column. */
export function table(rows: readonly (readonly [string, string])[], width = HELP_WIDTH): string[] {
  if (rows.length === 0) return [];
  const column = Math.min(MAX_LABEL, Math.max(...rows.map(([label]) => label.length))) + 4;
  return rows.map(([label, text]) => {
    const body = wrapHanging(text, width, column);
    const head = `  ${label}`;
    return head.length + 2 <= column ? `${head.padEnd(column)}${body}` : `${head}\n${' '.repeat(column)}${body}`;
  });
}
