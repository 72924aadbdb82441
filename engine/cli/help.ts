/** `pipeline help [command]` and `--version`. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadPipeline } from '../config/load.js';
import { findPipelineDir } from '../config/read.js';
import { reviewCommands } from '../stages/review.js';
import { packageRoot } from '../util/package-root.js';
import { BUILT_INS } from './commands.js';
import type { Io } from './io.js';
import { specFor } from './review-commands.js';

export function versionText(): string {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return `pipeline ${pkg.version}`;
}

async function pipelineCommands(io: Io) {
  try {
    return reviewCommands(await loadPipeline(findPipelineDir(io.cwd), io.env)).map(specFor);
  } catch {
    return [];
  }
}

export async function helpText(io: Io, command?: string): Promise<string> {
  const review = await pipelineCommands(io);
  if (command) {
    const spec = [...BUILT_INS, ...review].find((candidate) => candidate.name === command);
    if (spec) return `usage: ${spec.usage}\n\n${spec.summary}`;
  }
  const width = Math.max(...[...BUILT_INS, ...review].map((spec) => spec.name.length)) + 2;
  const row = (name: string, summary: string) => `  ${name.padEnd(width)}${summary}`;
  return [
    'usage: pipeline [--dir DIR] [--store DIR] [--json] <command> [options]',
    '',
    'A declarative pipeline engine: proposals move through a lifecycle declared in YAML.',
    '',
    'commands:',
    ...BUILT_INS.map((spec) => row(spec.name, spec.summary)),
    ...(review.length ? ['', 'review commands (stages/*.yaml):', ...review.map((spec) => row(spec.name, spec.summary))] : []),
    '',
    'global options:',
    row('--dir DIR', 'the pipeline directory (default: the nearest one holding pipeline.yaml)'),
    row('--store DIR', 'the store directory (default: PIPELINE_STORE, else pipeline.yaml store:)'),
    row('--json', 'machine-readable output on stdout'),
    '',
    'exit codes: 0 success, 1 refused or invalid, 2 could not be judged (retry later), 130 interrupted',
    'run `pipeline help <command>` for its usage.',
  ].join('\n');
}
