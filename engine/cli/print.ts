/** Printing one proposal outcome, and the exit code it stands for. */
import { EXIT, type ExitCode } from '../errors.js';
import type { Outcome } from '../outcome.js';
import type { Output } from './io.js';

export function exitCodeOfOutcome(outcome: Outcome): ExitCode {
  switch (outcome.kind) {
    case 'committed':
    case 'unchanged':
      return EXIT.ok;
    case 'refused':
      return EXIT.refused;
    case 'unjudged':
      return EXIT.unjudged;
  }
}

/** One line on stdout for a success (the proposal object with --json); the reason on stderr otherwise. */
export function printOutcome(out: Output, outcome: Outcome): ExitCode {
  switch (outcome.kind) {
    case 'committed':
      if (out.json) out.data(outcome.proposal);
      else out.line(outcome.from === null ? outcome.id : `${outcome.id} ${outcome.from} → ${outcome.to}`);
      break;
    case 'unchanged':
      if (out.json) out.data(outcome.proposal);
      else out.line(outcome.message);
      break;
    case 'refused':
      out.refused(outcome.message, outcome.details);
      break;
    case 'unjudged':
      out.note(`${outcome.id}: ${outcome.reason}; it stays as it is and the next run retries it`, 'could not be judged:');
      break;
  }
  return exitCodeOfOutcome(outcome);
}
