/** `pipeline store copy --from STORE --to STORE`: a whole store between backends (SPEC §11). */
import path from 'node:path';
import { EXIT, PipelineError } from '../../errors.js';
import { copyStore, copyToDirectory, describeCounts, notEmpty } from '../../store/copy.js';
import { openStore } from '../../store/open.js';
import { isPostgresUrl, parsePostgresUrl } from '../../store/postgres-store.js';
import { UsageError } from '../args.js';
import type { Context } from '../context.js';

const USAGE = 'usage: pipeline store copy --from STORE --to STORE';

export async function runStore(context: Context): Promise<number> {
  const [action] = context.parsed.positionals;
  if (action !== 'copy') throw new UsageError(`store: unknown action ${JSON.stringify(action)} (expected copy)`, USAGE);
  const from = context.parsed.values['from'];
  const to = context.parsed.values['to'];
  if (typeof from !== 'string' || typeof to !== 'string') throw new UsageError('store copy: --from and --to are both required', USAGE);
  const pipeline = await context.pipeline();
  const resolve = (location: string) => (isPostgresUrl(location) ? location : path.resolve(context.io.cwd, location));
  const [source, target] = [resolve(from), resolve(to)];
  const same = (a: string, b: string) => (isPostgresUrl(a) && isPostgresUrl(b) ? parsePostgresUrl(a).display === parsePostgresUrl(b).display : a === b);
  if (same(source, target)) throw new UsageError('store copy: --from and --to name the same store', USAGE);
  const fromStore = openStore(pipeline, source);
  const toStore = openStore(pipeline, target);
  context.stores.push(fromStore, toStore);
  if (!(await fromStore.exists())) throw new PipelineError('store.missing', `no store at ${fromStore.location}; nothing to copy`);
  let result;
  try {
    // A directory is filled beside its place and renamed into it: a failed copy leaves it as it was.
    result = isPostgresUrl(target) ? await copyStore(fromStore, toStore) : await copyToDirectory(fromStore, target, (dir) => openStore(pipeline, dir));
  } catch (error) {
    if (error instanceof Error && /is not empty$/.test(error.message)) throw notEmpty(toStore.location);
    throw error;
  }
  if (context.json) context.out.data({ from: fromStore.location, to: toStore.location, copied: result.copied, found: result.found, same: result.same });
  else {
    context.out.line(`copied ${fromStore.location} → ${toStore.location}:`);
    for (const line of describeCounts(result.copied)) context.out.line(`  ${line}`);
  }
  if (!result.same) {
    context.out.error(
      `the copy holds ${describeCounts(result.found).join(', ')} — not what was read; ${isPostgresUrl(target) ? `it was written to ${toStore.location}: check it` : `nothing was written to ${toStore.location}`}`,
    );
    return EXIT.refused;
  }
  if (!context.json) context.out.line('checked: the destination holds exactly these counts');
  return EXIT.ok;
}
