/**
 * The engine's import rules (scripts/check-imports.js, also run by `npm run lint`): no import cycle
 * among modules that load each other, and lifecycle/, jury/ and expr/ pure — checked on the real
 * engine, and shown to fail on scratch trees that break each rule.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImports, readGraph, START } from '../../scripts/check-imports.js';
import { ROOT, tempDir } from '../helpers.js';

/** A scratch source tree: relative path → text. */
function tree(files: Record<string, string>): string {
  const root = tempDir('imports-');
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('engine imports', () => {
  it('has no cycle, and its pure layers load nothing impure', () => {
    expect(checkImports(path.join(ROOT, 'engine'))).toEqual([]);
    // Rule 3 starts from the CLI's entry: renamed, the rule would check nothing.
    expect(readGraph(path.join(ROOT, 'engine')).has(START)).toBe(true);
  });

  it('finds a cycle of loading imports and names it; type-only and lazy imports close none', () => {
    const root = tree({
      'cli/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'cli/b.ts': "import { c } from '../runner/c.js';\nexport const b = c;\n",
      'runner/c.ts': "import { a } from '../cli/a.js';\nexport const c = a;\n",
      'store/d.ts': "import type { E } from './e.js';\nexport type D = E;\nexport const load = () => import('./e.js');\n",
      'store/e.ts': "import { type D } from './d.js';\nimport './f.js';\nexport type E = D;\n",
      'store/f.ts': "export type { D as F } from './d.js';\n",
    });
    expect(checkImports(root)).toEqual(['import cycle: cli/a.ts → cli/b.ts → runner/c.ts → cli/a.ts']);
  });

  it('finds a pure layer that imports the store or fs, directly or through a module it loads', () => {
    const root = tree({
      'jury/gate.ts': "import { readFileSync } from 'node:fs';\nimport { clamp } from '../util/numbers.js';\nexport const gate = () => clamp(readFileSync);\n",
      'lifecycle/decide.ts': "import type { Store } from '../store/types.js';\nexport type Decide = Store;\n",
      'expr/evaluate.ts':
        "import { createHmac } from 'node:crypto';\nimport { find } from '../util/root.js';\nexport const evaluate = () => [createHmac, find];\n",
      'util/numbers.ts': 'export const clamp = (value: unknown) => value;\n',
      'util/root.ts': "import { existsSync } from 'node:fs';\nexport const find = () => existsSync('.');\n",
      'store/types.ts': 'export interface Store { id: string }\n',
    });
    expect(checkImports(root).sort()).toEqual([
      'expr/evaluate.ts:2: expr/ is pure and may not load fs (through util/root.ts)',
      'jury/gate.ts:1: jury/ is pure and may not load fs',
      'lifecycle/decide.ts:1: lifecycle/ is pure and may not load store/types.ts',
    ]);
  });

  it('finds the YAML parser, ajv, or node:child_process, worker_threads or readline loaded whenever the CLI starts, through any chain; lazy and type-only imports are fine', () => {
    const root = tree({
      'cli/main.ts': "import { context } from './context.js';\nexport const main = () => context;\n",
      'cli/context.ts': "import { load } from '../config/load.js';\nexport const context = load;\n",
      'config/load.ts':
        "import type { Ajv } from 'ajv';\nimport { digest } from './cache.js';\nexport const load = async () => (await import('./build.js')).build(digest as unknown as Ajv);\n",
      'config/cache.ts':
        "import { createHash } from 'node:crypto';\nimport { parse } from 'yaml';\nimport type { Worker } from 'node:worker_threads';\nimport { ask } from './ask.js';\nexport const digest = [createHash, parse, ask as unknown as Worker];\n",
      'config/ask.ts':
        "import { createInterface } from 'node:readline/promises';\nexport const ask = () => process.getBuiltinModule('node:child_process').spawn && createInterface;\n",
      'config/build.ts': "import { Ajv } from 'ajv';\nimport { stringify } from 'yaml';\nexport const build = (x: unknown) => [Ajv, stringify, x];\n",
      'cli/standalone.ts': "import * as standalone from 'ajv/dist/standalone/index.js';\nexport const s = standalone;\n",
    });
    const how = 'import it where it is needed, with a dynamic import() (or process.getBuiltinModule for a node: module)';
    expect(checkImports(root)).toEqual([
      `config/cache.ts:2: loads yaml whenever the CLI starts (through cli/main.ts → cli/context.ts → config/load.ts → config/cache.ts); ${how}`,
      `config/ask.ts:1: loads readline/promises whenever the CLI starts (through cli/main.ts → cli/context.ts → config/load.ts → config/cache.ts → config/ask.ts); ${how}`,
    ]);
  });
});
