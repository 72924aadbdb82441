/**
 * The `pipeline` command: parse, dispatch, and one top-level catch that turns every error into
 * a message and an exit code (SPEC §7): 0 success, 1 refused / invalid / usage — and a disk or
 * file the person has to fix — 2 could not be judged, 128 + the signal's number interrupted.
 */
import { EXIT, isPipelineError } from '../errors.js';
import { noCommandError, parseCommandArgs, splitCommand, UsageError } from './args.js';
import type { CommandSpec } from './command-spec.js';
import { BUILT_INS } from './commands.js';
import { Context, type Injected } from './context.js';
import { processIo, Output, type Io } from './io.js';
import { allSpecs, findSpec, readHelpConfig, renderCommandHelp, renderOverview, unknownCommand, versionText } from './help.js';
import { reviewCommandSpec } from './review-commands.js';
import { systemReason } from '../store/failures.js';

/** Run one command line; resolves to its exit code. Throws only for a bug (the binary reports it as an internal error). */
export async function main(argv: string[], io: Io = processIo(), injected: Injected = {}): Promise<number> {
  const code = await dispatch(argv, io, injected);
  // A reader that went away (`pipeline list | head -1`) has read what it wanted: that is success.
  const lost = io.stdoutLost?.();
  return lost === 'closed' ? EXIT.ok : lost === 'failed' ? EXIT.refused : code;
}

async function dispatch(argv: string[], io: Io, injected: Injected): Promise<number> {
  const { command, rest } = splitCommand(argv);
  const early = new Output(io, { json: argv.includes('--json') });
  try {
    if (command === undefined || command === 'help') {
      if (command === undefined && rest.includes('--version')) {
        early.line(versionText());
        return EXIT.ok;
      }
      const words = command === 'help' ? wordsOf(rest) : [];
      if (command === undefined && !rest.some((token) => token === '--help' || token === '-h') && rest.length > 0) throw noCommandError(rest);
      const config = await readHelpConfig(io, argv);
      if (words.length === 0 || (words.length === 1 && words[0] === 'help')) {
        early.line(renderOverview(config));
        return EXIT.ok;
      }
      const specs = allSpecs(config);
      const target = findSpec(specs, words);
      if (!target) throw unknownCommand(words.join(' '), specs);
      early.line(renderCommandHelp(target, config));
      return EXIT.ok;
    }
    const spec: CommandSpec | undefined = BUILT_INS.find((candidate) => candidate.name === command) ?? (await reviewCommandSpec(io, argv, command));
    if (!spec) {
      const config = await readHelpConfig(io, argv);
      throw unknownCommand(command, allSpecs(config), config.notFound);
    }
    let parsed;
    try {
      parsed = parseCommandArgs(rest, spec.options);
    } catch (error) {
      if (error instanceof UsageError) throw new UsageError(error.message, `usage: ${spec.usage}`);
      throw error;
    }
    if (parsed.values['help']) {
      early.line(renderCommandHelp(spec, await readHelpConfig(io, argv)));
      return EXIT.ok;
    }
    const [min, max] = spec.positionals;
    if (parsed.positionals.length < min)
      throw new UsageError(`${spec.name}: missing ${spec.positionalNames?.[parsed.positionals.length] ?? 'argument'}`, `usage: ${spec.usage}`);
    if (parsed.positionals.length > max) throw new UsageError(`${spec.name}: unexpected argument "${parsed.positionals[max]}"`, `usage: ${spec.usage}`);
    const context = new Context(
      io,
      {
        ...(typeof parsed.values['dir'] === 'string' ? { dir: parsed.values['dir'] } : {}),
        ...(typeof parsed.values['store'] === 'string' ? { store: parsed.values['store'] } : {}),
        json: parsed.values['json'] === true,
      },
      parsed,
      injected,
    );
    try {
      return await spec.run(context);
    } finally {
      await context.close();
    }
  } catch (error) {
    return report(early, error);
  }
}

/** The words after `help` (global options and their values left out): `help pool top` → [pool, top]. */
function wordsOf(tokens: readonly string[]): string[] {
  const words: string[] = [];
  let rest = [...tokens];
  for (;;) {
    const { command, rest: after } = splitCommand(rest);
    if (command === undefined) return words;
    words.push(command);
    rest = after;
  }
}

function report(out: Output, error: unknown): number {
  if (error instanceof UsageError) {
    out.error(error.message);
    if (error.hint?.startsWith('usage: ')) out.note(error.hint);
    else if (error.hint) out.note(`  hint: ${error.hint}`);
    return EXIT.refused;
  }
  if (isPipelineError(error)) {
    for (const issue of error.issues) out.issue(issue);
    out.error(error.message, error.code === 'config.invalid' ? 'run `pipeline validate` to see this list again; nothing was written' : error.hint);
    return error.exitCode;
  }
  const plain = describeSystemFailure(error);
  if (plain === undefined) throw error;
  out.error(plain);
  return EXIT.refused;
}

/** A failure the person can fix (a full or read-only disk, a file that is a link) that no store named, in words; undefined for a bug. */
function describeSystemFailure(error: unknown): string | undefined {
  const { code, path, message } = (error ?? {}) as { code?: unknown; path?: unknown; message?: unknown };
  // A path that is a link, FIFO or directory where a file belongs (util/atomic-write's NotRegularFile) says so itself.
  if (code === 'ENOTREG' && typeof message === 'string') return message;
  const reason = systemReason(error);
  if (reason === undefined) return undefined;
  return typeof path === 'string' ? `cannot use ${path}: ${reason}` : reason;
}
