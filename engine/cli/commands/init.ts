/** `pipeline init [DIR]`: a working copy of the shipped pipeline in a new (or empty) directory. */
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EXIT } from '../../errors.js';
import { fileKind } from '../../util/file-kind.js';
import { packageRoot } from '../../util/package-root.js';
import { loadYaml } from '../../util/load-yaml.js';
import type { Context } from '../context.js';

/** What a pipeline directory holds; the engine itself stays in the installed package. */
export const SCAFFOLD = ['pipeline.yaml', 'machines', 'stages', 'rubrics', 'schemas', 'examples'];

export async function runInit(context: Context): Promise<number> {
  const target = path.resolve(context.io.cwd, context.parsed.positionals[0] ?? '.');
  const link = lstatSync(target, { throwIfNoEntry: false });
  if (link?.isSymbolicLink() && !existsSync(target)) {
    context.out.refused(`${target} is a symbolic link to nothing; init writes into a new or empty directory`);
    return EXIT.refused;
  }
  const found = existsSync(target) ? statSync(target) : undefined;
  if (found && !found.isDirectory()) {
    context.out.refused(`${target} is ${fileKind(found)}; init writes into a new or empty directory`);
    return EXIT.refused;
  }
  if (existsSync(target) && readdirSync(target).length > 0) {
    context.out.refused(`${target} is not empty; init only writes into a new or empty directory`);
    return EXIT.refused;
  }
  mkdirSync(target, { recursive: true });
  const root = packageRoot();
  for (const entry of SCAFFOLD) {
    const from = path.join(root, entry);
    if (existsSync(from)) cpSync(from, path.join(target, entry), { recursive: true });
  }
  // The store is data, not configuration: keep it out of version control from the start.
  writeFileSync(path.join(target, '.gitignore'), `# the store: proposals, ledgers, the audit log (data, not configuration)\n/${await storeEntry(target)}/\n`);
  if (context.json) context.out.data({ dir: target, files: [...SCAFFOLD, '.gitignore'] });
  else {
    context.out.line(target);
    context.out.note(
      `created a copy of the shipped pipeline in ${target}\nnext: cd ${path.relative(context.io.cwd, target) || '.'} && pipeline validate && pipeline run transform`,
    );
  }
  return EXIT.ok;
}

/** The store directory pipeline.yaml names, relative to it (the default when it names another place). */
async function storeEntry(dir: string): Promise<string> {
  const { parse, YAMLError } = await loadYaml();
  let store: unknown;
  try {
    store = (parse(readFileSync(path.join(dir, 'pipeline.yaml'), 'utf8')) as { store?: unknown } | null)?.store;
  } catch (error) {
    // An unreadable or unparsable copy is reported by the first command that loads it; anything
    // else is the engine's own fault and is not hidden behind the default.
    if (!(error instanceof YAMLError) && (error as NodeJS.ErrnoException).syscall === undefined) throw error;
  }
  if (typeof store === 'string' && !store.includes('$') && !path.isAbsolute(store) && !store.startsWith('..')) return path.normalize(store).replace(/\/+$/, '');
  return '.pipeline';
}
