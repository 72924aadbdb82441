/**
 * Questions on the terminal, a line at a time (the review walk, the question before a paid batch):
 * Ctrl-C and Ctrl-D (or a closed stdin) end them as answers, never as errors.
 */
import type { Interface } from 'node:readline/promises';
import type { Context } from './context.js';

export type Answer = { kind: 'line'; text: string } | { kind: 'eof' } | { kind: 'interrupt' };

/** Questions on the terminal; Ctrl-C and Ctrl-D (or a closed stdin) end them as answers, never as errors. */
export class Prompter {
  private interrupted = false;
  private closed = false;
  private readonly rl: Interface;

  constructor(context: Context) {
    const { createInterface } = process.getBuiltinModule('node:readline/promises');
    this.rl = createInterface({ input: context.io.stdin, output: context.io.stderr as NodeJS.WritableStream });
    // With a listener, readline reports Ctrl-C here instead of closing as if it were Ctrl-D.
    this.rl.on('SIGINT', () => this.interrupt());
    this.rl.on('close', () => (this.closed = true));
  }

  interrupt(): void {
    this.interrupted = true;
    this.rl.close();
  }

  private ending(): Answer {
    return this.interrupted ? { kind: 'interrupt' } : { kind: 'eof' };
  }

  /** The next line, or how the input ended. (readline leaves a pending question unsettled when it closes.) */
  ask(question: string): Promise<Answer> {
    if (this.closed) return Promise.resolve(this.ending());
    return new Promise((resolve) => {
      const onClose = () => resolve(this.ending());
      this.rl.once('close', onClose);
      this.rl.question(question).then(
        (text) => {
          this.rl.off('close', onClose);
          resolve({ kind: 'line', text });
        },
        () => {
          this.rl.off('close', onClose);
          resolve(this.ending());
        },
      );
    });
  }

  close(): void {
    this.rl.close();
  }
}
