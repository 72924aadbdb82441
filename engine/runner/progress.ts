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

export function terminalProgress(stream: { write(text: string): unknown }, stage: string, total: number, columns = 80): Progress {
  let current = 0;
  let last = 0;
  const draw = (label: string) => {
    const width = Math.max(10, Math.min(40, columns - 40));
    const filled = total === 0 ? width : Math.round((current / total) * width);
    stream.write(`\r${stage} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${current}/${total} ${label}`.slice(0, columns - 1).padEnd(columns - 1));
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
