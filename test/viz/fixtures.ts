/** Shared pieces of the visualizer tests: the second pipeline and an in-process command line. */
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { Io } from '../../engine/cli/io.js';
import { main } from '../../engine/cli/main.js';
import { ROOT } from '../helpers.js';

/** The editorial pipeline: a second, different machine (guarded alternatives, two guards, a self-loop). */
export const EDITORIAL = path.join(ROOT, 'test', 'fixtures', 'viz', 'editorial');

/** `{source_id, article}` input for the editorial pipeline. */
let counter = 0;
export function articleInput(headline = 'Rivers rise after a week of rain', body = 'It rained.'): { source_id: string; article: Record<string, unknown> } {
  counter++;
  return { source_id: `src-${counter}`, article: { headline, body } };
}

export interface Captured {
  io: Io;
  stdout: () => string;
  stderr: () => string;
  /** Simulate Ctrl-C: call every installed interrupt handler. */
  interrupt: () => void;
  /** Resolves with the stderr text once it matches `pattern`. */
  waitForStderr: (pattern: RegExp) => Promise<RegExpMatchArray>;
}

/** An Io that captures output and lets a test press Ctrl-C. */
export function captureIo(cwd = ROOT): Captured {
  let out = '';
  let err = '';
  const handlers = new Set<() => void>();
  const waiters: { pattern: RegExp; resolve: (match: RegExpMatchArray) => void }[] = [];
  const io: Io = {
    stdout: { write: (text: string) => (out += text) },
    stderr: {
      write: (text: string) => {
        err += text;
        for (const waiter of [...waiters]) {
          const match = err.match(waiter.pattern);
          if (match) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(match);
          }
        }
        return true;
      },
    },
    stdin: new PassThrough(),
    cwd,
    env: { ...process.env, PIPELINE_CONFIG_CACHE: 'off', NO_COLOR: '1' },
    interactive: false,
    stderrIsTTY: false,
    onInterrupt(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
  };
  return {
    io,
    stdout: () => out,
    stderr: () => err,
    interrupt: () => [...handlers].forEach((handler) => handler()),
    waitForStderr: (pattern) =>
      new Promise((resolve) => {
        const match = err.match(pattern);
        if (match) resolve(match);
        else waiters.push({ pattern, resolve });
      }),
  };
}

/** Run `pipeline …args` in this process. */
export async function runInProcess(args: string[], captured = captureIo()): Promise<{ code: number; stdout: string; stderr: string }> {
  const code = await main(args, captured.io);
  return { code, stdout: captured.stdout(), stderr: captured.stderr() };
}
