/**
 * The shape of a command: what the parser reads and what help renders. Kept apart from the list
 * of built-in commands so the review commands can share it without importing that list.
 */
import type { Pipeline } from '../config/load.js';
import type { FromConfig, OptionSpecs } from './args.js';
import type { Context } from './context.js';

/** A positional argument, for help. */
export interface ArgumentHelp {
  name: string;
  description: string;
  /** More of the description, when the configuration loads. */
  more?: (pipeline: Pipeline) => string;
  /** What applies when it is not given (an optional argument). */
  default?: FromConfig<string>;
  allowed?: FromConfig<readonly string[]>;
}

export interface CommandSpec {
  name: string;
  usage: string;
  summary: string;
  options: OptionSpecs;
  /** How many positionals: [min, max]. */
  positionals: [number, number];
  positionalNames?: string[];
  /** The positionals, described for help. */
  arguments?: ArgumentHelp[];
  /** One command line that works (help shows it). */
  example?: FromConfig<string>;
  /** More help after the options (a format, a note), given the configuration when it loads. */
  details?: (pipeline: Pipeline | undefined) => string[];
  run(context: Context): Promise<number>;
}

/** A well-formed id for examples: help shows a command line, not a placeholder. */
export const EXAMPLE_ID = '01JC8A7ZJ4W6V3X8RDY2C5N9KT';
