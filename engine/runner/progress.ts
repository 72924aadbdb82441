/**
 * A one-line progress bar on stderr, only on a terminal (SPEC §7): redrawn in place with \r,
 * throttled, and erased at the end so the summary starts on a clean line. A single status line
 * needs no library.
 */
export interface Progress {
  tick(label?: string): void;
  done(): void;
}

export const silentProgress: Progress = { tick() {}, done() {} };

/** The width of a terminal that reports none, 0 (a pseudo-terminal with no size set) or nonsense. */
export const DEFAULT_COLUMNS = 80;
const MAX_COLUMNS = 10_000;

/** `columns` as the terminal reported it, when it is a usable width; else DEFAULT_COLUMNS. */
export function usableColumns(columns: number | undefined): number {
  return columns !== undefined && Number.isInteger(columns) && columns >= 1 && columns <= MAX_COLUMNS ? columns : DEFAULT_COLUMNS;
}

export function terminalProgress(stream: { write(text: string): unknown }, stage: string, total: number, reported?: number): Progress {
  const columns = usableColumns(reported);
  let current = 0;
  let last = 0;
  const draw = (label: string) => {
    const width = Math.max(10, Math.min(40, columns - 40));
    // Work taken over at the end of a run (another run's lapsed lease) can tick past the selection's total.
    const filled = total === 0 ? width : Math.min(width, Math.round((current / total) * width));
    const line = `${stage} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${current}/${total} ${label}`;
    // One column short of the width, so the cursor never wraps to a new line.
    stream.write(`\r${line.slice(0, columns - 1).padEnd(columns - 1)}`);
  };
  return {
    tick(label = '') {
      current++;
      const now = Date.now();
      if (now - last > 50 || current === total) {
        last = now;
        draw(label);
      }
    },
    done() {
      stream.write(`\r${' '.repeat(columns - 1)}\r`);
    },
  };
}
