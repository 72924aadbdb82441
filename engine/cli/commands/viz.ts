/**
 * `pipeline viz`: render the lifecycle with live counts (SPEC §8) to stdout or `--out FILE`, or
 * serve the page on 127.0.0.1 with `--serve` until Ctrl-C. The visualizer is imported on demand so
 * the layout engine never slows down the start of any other command.
 */
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { EXIT, PipelineError } from '../../errors.js';
import type { Lifecycle } from '../../lifecycle/machine.js';
import { NotRegularFile, writeFileAtomic } from '../../util/atomic-write.js';
import { listWords } from '../../util/suggest.js';
import { escapeTerminal } from '../../util/terminal.js';
import { isVizFormat, VIZ_FORMATS, type VizFormat } from '../../viz/formats.js';
import type { ProposalRow, VizSnapshot } from '../../viz/index.js';
import { UsageError } from '../args.js';
import type { Context } from '../context.js';
import { malformedFileNote } from '../../outcome.js';

const USAGE = 'usage: pipeline viz [--format html|svg|dot|mermaid|json] [--out FILE] [--serve [--port N]]';
/** The served page's default port (0 picks a free one). */
export const DEFAULT_PORT = 4173;

interface VizOptions {
  format: VizFormat;
  out?: string;
  serve?: { port: number };
}

/** Read and check the options before anything is loaded; every misuse is a usage error. */
export function parseVizOptions(values: Record<string, unknown>, json: boolean): VizOptions {
  const given = values['format'] as string | undefined;
  if (given !== undefined && !isVizFormat(given)) {
    throw new UsageError(`unknown format "${given}" (expected ${listWords([...VIZ_FORMATS])})`, USAGE);
  }
  if (json && given !== undefined && given !== 'json') throw new UsageError(`--json asks for --format json, not --format ${given}`, USAGE);
  const format = (given ?? (json ? 'json' : 'html')) as VizFormat;
  const out = values['out'] as string | undefined;
  const port = values['port'] as string | undefined;
  if (!values['serve']) {
    if (port !== undefined) throw new UsageError('--port needs --serve', USAGE);
    return { format, ...(out !== undefined ? { out } : {}) };
  }
  if (format !== 'html') throw new UsageError(`--serve serves the html page; it cannot serve --format ${format}`, USAGE);
  if (out !== undefined) throw new UsageError('--serve and --out cannot be combined: write the file, or serve the page', USAGE);
  if (port !== undefined && (!/^[0-9]+$/.test(port) || Number(port) > 65535))
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${port}"`, USAGE);
  return { format, serve: { port: port === undefined ? DEFAULT_PORT : Number(port) } };
}

export async function runViz(context: Context): Promise<number> {
  const options = parseVizOptions(context.parsed.values, context.json);
  const engine = await context.readEngine();
  const viz = await import('../../viz/index.js');
  const { lifecycle, stages } = engine.pipeline;
  const title = viz.titleField(stages);

  // Report each unreadable file or unknown status once, however often a served page polls.
  const reported = new Set<string>();
  const read: Read = async (cap) => {
    const result = await viz.readSnapshot(engine.store, lifecycle.states, title, cap);
    for (const id of result.malformed) {
      if (!reported.has(id)) context.out.warn(malformedFileNote(id));
      reported.add(id);
    }
    for (const [status, count] of Object.entries(result.unknown)) {
      if (reported.has(`status:${status}`)) continue;
      reported.add(`status:${status}`);
      const has = count === 1 ? 'proposal has' : 'proposals have';
      context.out.warn(`${count} ${has} status ${JSON.stringify(status)}, which the lifecycle does not know — not shown`);
    }
    return escapeTitles(result.snapshot);
  };

  if (options.serve) return serve(context, options.serve.port, viz, read, lifecycle);

  // Only the page lists proposals; the other formats need the counts alone.
  const snapshot = await read(options.format === 'html' ? undefined : 0);
  const graph = viz.buildGraph(lifecycle, snapshot.counts);
  const text = viz.renderFormat(options.format, graph, snapshot, { generatedAt: engine.now() });
  if (options.out === undefined) {
    context.io.stdout.write(text);
    return EXIT.ok;
  }
  const target = path.resolve(context.io.cwd, options.out);
  try {
    // A file replaced keeps its permissions: the page lists proposals, and a private file stays private.
    const existing = lstatSync(target, { throwIfNoEntry: false });
    await writeFileAtomic(target, text, existing?.isFile() ? { mode: existing.mode & 0o777 } : {});
  } catch (error) {
    throw new PipelineError('viz.write', `cannot write ${options.out}: ${describeWriteError(error)}`);
  }
  context.out.note(`wrote ${options.out} (${options.format})`);
  return EXIT.ok;
}

/**
 * Why a file could not be written, in words that name no temporary file: the error of an atomic
 * write is about the temp file beside the target, whose name means nothing to the person.
 */
export function describeWriteError(error: unknown): string {
  const reasons: Record<string, string> = {
    ENOENT: 'no such directory',
    ENOTDIR: 'a part of the path is not a directory',
    EISDIR: 'it is a directory',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    ENAMETOOLONG: 'the name is too long',
  };
  if (error instanceof NotRegularFile) return `it is ${error.what}`;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== undefined && Object.hasOwn(reasons, code)) return reasons[code]!;
  return code ? `the system refused it (${code})` : 'the system refused it';
}

/**
 * Proposal titles reach the page (and a terminal, when the page goes to stdout) with every control
 * shown as a visible escape: a browser honours a right-to-left override just as a terminal does.
 */
function escapeTitles(snapshot: VizSnapshot): VizSnapshot {
  const escaped = (row: ProposalRow): ProposalRow => (row.title === null ? row : { ...row, title: escapeTerminal(row.title) });
  const proposals = Object.fromEntries(Object.entries(snapshot.proposals).map(([state, rows]) => [state, rows.map(escaped)]));
  return { ...snapshot, proposals };
}

type Viz = typeof import('../../viz/index.js');
type Read = (cap?: number) => Promise<VizSnapshot>;

/**
 * Serve until Ctrl-C. Ctrl-C is how a served page is meant to end, not an interruption of
 * unfinished work, so it exits 0 (runs exit 130).
 */
async function serve(context: Context, port: number, viz: Viz, read: Read, lifecycle: Lifecycle): Promise<number> {
  let server;
  try {
    server = await viz.startVizServer({
      port,
      page: async () => {
        const snapshot = await read();
        return viz.renderHtml(viz.buildGraph(lifecycle, snapshot.counts), snapshot, { live: true });
      },
      state: () => read(),
      onError: (error) => context.out.warn(`viz: ${(error as Error).message}`),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PipelineError('viz.listen', `cannot listen on 127.0.0.1:${port}: ${code === 'EADDRINUSE' ? 'the port is in use' : (error as Error).message}`, {
      hint: '--port 0 picks a free port',
    });
  }
  context.out.note(`serving ${server.url} (Ctrl-C to stop)`);
  await new Promise<void>((resolve) => {
    const remove = context.io.onInterrupt(() => {
      remove();
      resolve();
    });
  });
  await server.close();
  context.out.note('stopped');
  return EXIT.ok;
}
