/** `pipeline init [DIR]`: a working copy of the shipped pipeline in a new (or empty) directory. */
import { cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { EXIT } from '../../errors.js';
import { packageRoot } from '../../util/package-root.js';
import type { Context } from '../context.js';

/** What a pipeline directory holds; the engine itself stays in the installed package. */
export const SCAFFOLD = ['pipeline.yaml', 'machines', 'stages', 'rubrics', 'schemas', 'examples'];

export async function runInit(context: Context): Promise<number> {
  const target = path.resolve(context.io.cwd, context.parsed.positionals[0] ?? '.');
  if (existsSync(target) && !statSync(target).isDirectory()) {
    context.out.refused(`${target} is a file; init writes into a new or empty directory`);
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
  if (context.json) context.out.data({ dir: target, files: SCAFFOLD });
  else {
    context.out.line(target);
    context.out.note(`created a copy of the shipped pipeline in ${target}\nnext: cd ${path.relative(context.io.cwd, target) || '.'} && pipeline validate && pipeline run transform`);
  }
  return EXIT.ok;
}
