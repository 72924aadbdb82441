/**
 * Command-line parsing on top of node:util `parseArgs`. Before parsing, every `--option` is
 * checked against the command's options, so an unknown one is refused as `unknown option: --x`
 * and is never taken as a positional argument or as another option's value.
 */
import { parseArgs } from 'node:util';
import type { Pipeline } from '../config/load.js';
import { didYouMean } from '../util/suggest.js';

/** Help text that may depend on the configuration (a default, the allowed values); a plain value when it does not. */
export type FromConfig<T> = T | ((pipeline: Pipeline) => T);

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** What the option does, for help. */
  description?: string;
  /** The value's name in help (`N`, `DIR`, `FILE`). */
  placeholder?: string;
  /** What applies when the option is not given, for help. */
  default?: FromConfig<string>;
  /** The values it accepts, when they are a closed list. */
  allowed?: FromConfig<readonly string[]>;
}

export type OptionSpecs = Record<string, OptionSpec>;

export class UsageError extends Error {
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super(message);
    this.name = 'UsageError';
    this.hint = hint;
  }
}

/** Options every command accepts, before or after the command name. */
export const GLOBAL_OPTIONS: OptionSpecs = {
  dir: { type: 'string', placeholder: 'DIR', description: 'the pipeline directory', default: 'the nearest directory above holding pipeline.yaml' },
  store: { type: 'string', placeholder: 'DIR', description: 'the store directory', default: 'PIPELINE_STORE, else store: in pipeline.yaml' },
  json: { type: 'boolean', description: 'machine-readable output on stdout, never mixed with prose' },
  help: { type: 'boolean', short: 'h', description: 'this help' },
};

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

function optionToken(token: string): { name: string; inlineValue: boolean } | undefined {
  if (!token.startsWith('--') || token === '--') return undefined;
  const eq = token.indexOf('=');
  return { name: eq < 0 ? token.slice(2) : token.slice(2, eq), inlineValue: eq >= 0 };
}

const NEGATIVE_NUMBER = /^-[0-9]/;
/** Options whose value names a file, a directory or a store. */
const PATH_PLACEHOLDER = /^(DIR|FILE|PATH|STORE)\b/;
const PATH_NOUNS: Record<string, string> = { DIR: 'a directory', FILE: 'a file name', PATH: 'a path', STORE: 'a store' };

/**
 * Refuse unknown options, options missing their value, and a single-valued option given twice
 * (`--state a --state b` must not quietly mean b), by name, before parseArgs
 * sees them.
 */
function refuseUnknownOptions(tokens: readonly string[], specs: OptionSpecs): void {
  const shorts = new Map(Object.entries(specs).flatMap(([name, spec]) => (spec.short ? [[spec.short, name] as const] : [])));
  const given = new Map<string, string>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === '--') return;
    const option = optionToken(token);
    if (option) {
      const spec = Object.hasOwn(specs, option.name) ? specs[option.name] : undefined;
      if (!spec) throw new UsageError(`unknown option: --${option.name}`, didYouMean(option.name, Object.keys(specs))?.replace(/"(.*)"/, '"--$1"'));
      let value = option.inlineValue ? token.slice(token.indexOf('=') + 1) : undefined;
      if (spec.type === 'string' && !option.inlineValue) {
        const next = tokens[i + 1];
        // A negative number is a value (and refused as such by the option's own check), never a flag.
        if (next === undefined || (next.startsWith('-') && next !== '-' && !NEGATIVE_NUMBER.test(next))) {
          if (next !== undefined && optionToken(next) && !Object.hasOwn(specs, optionToken(next)!.name))
            throw new UsageError(`unknown option: --${optionToken(next)!.name}`);
          throw new UsageError(`--${option.name} needs a value`);
        }
        value = next;
        i++;
      }
      // An empty path would quietly mean the current directory (`--store "$UNSET"` writing a store there).
      const path = PATH_PLACEHOLDER.exec(spec.placeholder ?? '')?.[1];
      if (value === '' && path) throw new UsageError(`--${option.name} needs ${PATH_NOUNS[path]}, got an empty one`);
      if (spec.type === 'string' && !spec.multiple && value !== undefined) {
        const first = given.get(option.name);
        if (first !== undefined) throw new UsageError(`--${option.name} is given twice ("${first}", then "${value}"); it takes one value`);
        given.set(option.name, value);
      }
      if (spec.type === 'boolean' && option.inlineValue) throw new UsageError(`--${option.name} takes no value`);
      continue;
    }
    if (token.startsWith('-') && token !== '-' && !/^-\d/.test(token)) {
      const letters = token.slice(1);
      for (const letter of letters) if (!shorts.has(letter)) throw new UsageError(`unknown option: -${letter}`);
    }
  }
}

/** Parse `tokens` for a command that takes `specs` plus the global options. */
export function parseCommandArgs(tokens: readonly string[], specs: OptionSpecs): Parsed {
  const all = { ...GLOBAL_OPTIONS, ...specs };
  refuseUnknownOptions(tokens, all);
  // parseArgs reads `--limit -1` as a missing value: hand it the value inline, as `--limit=-1`.
  const args: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const option = optionToken(token);
    const next = tokens[i + 1];
    if (option && !option.inlineValue && all[option.name]?.type === 'string' && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      args.push(`${token}=${next}`);
      i++;
    } else args.push(token);
    if (token === '--') {
      args.push(...tokens.slice(i + 1));
      break;
    }
  }
  // parseArgs is given only what it reads (its own `default` would set values).
  const options = Object.fromEntries(
    Object.entries(all).map(([name, spec]) => {
      const parsing = { type: spec.type, ...(spec.multiple ? { multiple: true } : {}), ...(spec.short ? { short: spec.short } : {}) };
      return [name, parsing];
    }),
  );
  try {
    const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true });
    return { values: values as Parsed['values'], positionals };
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]!.replace(/^Option '(--\S+).*argument missing/, '$1 needs a value'));
  }
}

/** The usage line of the command line as a whole (SPEC §7). */
export const TOP_USAGE = 'usage: pipeline [--dir DIR] [--store DIR] [--json] <command> [options]   (`pipeline help` lists the commands)';

/**
 * Why a command line with options but no command cannot run: an unknown option, a global option
 * missing its value (`pipeline --store`), or simply no command.
 */
export function noCommandError(rest: readonly string[]): UsageError {
  const unknown = rest.find((token) => token.startsWith('-') && !Object.hasOwn(GLOBAL_OPTIONS, token.replace(/^--?/, '').split('=')[0]!));
  if (unknown) return new UsageError(`unknown option: ${unknown.split('=')[0]}`, TOP_USAGE);
  try {
    refuseUnknownOptions(rest, GLOBAL_OPTIONS);
  } catch (error) {
    if (error instanceof UsageError) return new UsageError(error.message, TOP_USAGE);
    throw error;
  }
  return new UsageError('no command given', TOP_USAGE);
}

/** Split off the command name: the first token that is not a global option (or its value). */
export function splitCommand(argv: readonly string[]): { command?: string; rest: string[] } {
  const rest = [...argv];
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!;
    if (token === '--') break;
    const option = optionToken(token);
    if (option) {
      if (Object.hasOwn(GLOBAL_OPTIONS, option.name) && GLOBAL_OPTIONS[option.name]!.type === 'string' && !option.inlineValue) i++;
      continue;
    }
    if (token.startsWith('-') && token !== '-') continue;
    rest.splice(i, 1);
    return { command: token, rest };
  }
  return { rest };
}

export function positiveInteger(value: unknown, name: string, usage?: string): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^[0-9]+$/.test(text) || Number(text) < 1)
    throw new UsageError(`--${name} must be a whole number of 1 or more, got "${text}"`, usage ? `usage: ${usage}` : undefined);
  return Number(text);
}
