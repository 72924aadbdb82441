#!/usr/bin/env node
// The engine's import rules, checked from the source (run by `npm run lint` and by
// test/structure/imports.test.ts):
//   1. No cycle among the engine's modules. Only imports that load code count: `import type` and
//      `export type` vanish at compile time, and a dynamic `import()` loads lazily, after every
//      module is initialised (the CLI defers heavy modules that way), so neither can close a cycle.
//   2. lifecycle/, jury/ and expr/ are pure: they, and every module they load, stay inside the pure
//      layers, util/ and the configuration's types, and never reach the file system, processes,
//      the network or the store.
//   3. The CLI starts light: nothing cli/main.ts loads, directly or in turn, imports the YAML parser
//      or ajv. They are needed only when the configuration cache misses (config/build.ts) or a
//      command reads or prints YAML, and load then, with a dynamic `import()`.
// Biome's noRestrictedImports (biome.json) checks rule 2 on each import as it is written; this
// script also follows what those imports load in turn.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The layers that must stay pure, and what they may load. */
export const PURE_LAYERS = ['lifecycle', 'jury', 'expr'];
const PURE_MAY_LOAD = [...PURE_LAYERS, 'util'];
const PURE_MAY_LOAD_FILES = ['config/types.ts', 'config/schema-types.generated.ts'];
export const IMPURE_MODULES = ['fs', 'fs/promises', 'child_process', 'net', 'http', 'https', 'dgram', 'worker_threads', 'pg'];

function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Whether an import or export declaration carries only types (erased by the compiler). */
function typeOnly(node) {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause;
    if (!clause) return false;
    if (clause.isTypeOnly) return true;
    if (clause.name) return false;
    const bindings = clause.namedBindings;
    return bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly);
  }
  if (node.isTypeOnly) return true;
  const clause = node.exportClause;
  return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((element) => element.isTypeOnly);
}

/** Every import of one file: `{specifier, kind: 'value' | 'type' | 'lazy', line}`. */
export function importsOf(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found = [];
  const lineOf = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, kind: typeOnly(node) ? 'type' : 'value', line: lineOf(node) });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) found.push({ specifier: argument.text, kind: 'lazy', line: lineOf(node) });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, kind: 'type', line: lineOf(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The graph of a source tree: file (relative to root) → its imports, each resolved to a file or a bare module. */
export function readGraph(root) {
  const graph = new Map();
  for (const full of sourceFiles(root)) {
    const file = path.relative(root, full);
    const edges = importsOf(full, readFileSync(full, 'utf8')).map((edge) => {
      if (!edge.specifier.startsWith('.')) return { ...edge, module: edge.specifier.replace(/^node:/, '') };
      const target = path.relative(root, path.resolve(path.dirname(full), edge.specifier)).replace(/\.js$/, '.ts');
      return { ...edge, file: target };
    });
    graph.set(file, edges);
  }
  return graph;
}

/** The cycles of the graph's loading imports: each a list of files, in import order, closing on the first. */
export function findCycles(graph) {
  const next = (file) =>
    (graph.get(file) ?? []).filter((edge) => edge.kind === 'value' && edge.file !== undefined && graph.has(edge.file)).map((edge) => edge.file);
  // Tarjan's strongly connected components: every cycle lies within one.
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  let counter = 0;
  const connect = (file) => {
    index.set(file, counter);
    low.set(file, counter);
    counter++;
    stack.push(file);
    onStack.add(file);
    for (const target of next(file)) {
      if (!index.has(target)) {
        connect(target);
        low.set(file, Math.min(low.get(file), low.get(target)));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file), index.get(target)));
    }
    if (low.get(file) !== index.get(file)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || next(file).includes(file)) components.push(new Set(component));
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) connect(file);
  // Name one concrete cycle per component (a shortest path back to its first file).
  return components.map((component) => {
    const start = [...component].sort()[0];
    const from = new Map([[start, undefined]]);
    const queue = [start];
    while (queue.length) {
      const file = queue.shift();
      for (const target of next(file)) {
        if (!component.has(target)) continue;
        if (target === start) {
          const cycle = [];
          for (let at = file; at !== undefined; at = from.get(at)) cycle.unshift(at);
          return [...cycle, start];
        }
        if (!from.has(target)) {
          from.set(target, file);
          queue.push(target);
        }
      }
    }
    return [start, start];
  });
}

/** The CLI's entry, and the packages it may load only lazily (rule 3). */
export const START = 'cli/main.ts';
// Node's own modules are named without `node:` here (readGraph drops it).
export const LAZY_MODULES = ['yaml', 'ajv', 'child_process', 'worker_threads', 'readline'];
const lazyOnly = (module) => LAZY_MODULES.some((name) => module === name || module.startsWith(`${name}/`));

/** Every import of a lazy-only package among the modules the CLI's entry loads: `{file, line, what, via}`. */
export function findEagerLoads(graph) {
  if (!graph.has(START)) return [];
  const problems = [];
  const via = new Map([[START, [START]]]);
  const queue = [START];
  while (queue.length) {
    const file = queue.shift();
    for (const edge of graph.get(file) ?? []) {
      if (edge.kind !== 'value') continue;
      if (edge.module !== undefined && lazyOnly(edge.module)) problems.push({ file, line: edge.line, what: edge.module, via: via.get(file) });
      else if (edge.file !== undefined && graph.has(edge.file) && !via.has(edge.file)) {
        via.set(edge.file, [...via.get(file), edge.file]);
        queue.push(edge.file);
      }
    }
  }
  return problems;
}

const layerOf = (file) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : file);
const pureTarget = (file) => PURE_MAY_LOAD.includes(layerOf(file)) || PURE_MAY_LOAD_FILES.includes(file);

/** Every way a pure layer reaches what it may not: `{file, line, what, via}`, via the chain of loading imports. */
export function findImpurities(graph) {
  const problems = [];
  for (const [file, edges] of graph) {
    if (!PURE_LAYERS.includes(layerOf(file))) continue;
    for (const edge of edges) {
      if (edge.file !== undefined && !pureTarget(edge.file)) problems.push({ file, line: edge.line, what: edge.file, via: [] });
      if (edge.module !== undefined && IMPURE_MODULES.includes(edge.module)) problems.push({ file, line: edge.line, what: edge.module, via: [] });
    }
    // What the file loads in turn (util/ modules are allowed only while they stay pure too).
    const seen = new Set([file]);
    const queue = edges
      .filter((edge) => edge.kind !== 'type' && edge.file !== undefined && pureTarget(edge.file))
      .map((edge) => ({ at: edge.file, line: edge.line, via: [edge.file] }));
    while (queue.length) {
      const { at, line, via } = queue.shift();
      if (seen.has(at)) continue;
      seen.add(at);
      for (const edge of graph.get(at) ?? []) {
        if (edge.kind === 'type') continue;
        if (edge.module !== undefined && IMPURE_MODULES.includes(edge.module)) problems.push({ file, line, what: edge.module, via });
        else if (edge.file !== undefined && !pureTarget(edge.file)) problems.push({ file, line, what: edge.file, via });
        else if (edge.file !== undefined) queue.push({ at: edge.file, line, via: [...via, edge.file] });
      }
    }
  }
  return problems;
}

/** Every broken rule of a source tree, as lines to print (none: the tree is fine). */
export function checkImports(root) {
  const graph = readGraph(root);
  const lines = findCycles(graph).map((cycle) => `import cycle: ${cycle.join(' → ')}`);
  for (const { file, line, what, via } of findImpurities(graph)) {
    const how = via.length ? ` (through ${via.join(' → ')})` : '';
    lines.push(`${file}:${line}: ${layerOf(file)}/ is pure and may not load ${what}${how}`);
  }
  for (const { file, line, what, via } of findEagerLoads(graph)) {
    lines.push(
      `${file}:${line}: loads ${what} whenever the CLI starts (through ${via.join(' → ')}); import it where it is needed, with a dynamic import() (or process.getBuiltinModule for a node: module)`,
    );
  }
  return lines;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // The engine's sources, or another tree given as the argument (the tests check a scratch tree).
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(path.dirname(fileURLToPath(import.meta.url))), 'engine'));
  const problems = checkImports(root);
  for (const line of problems) console.error(`${path.relative(process.cwd(), root) || '.'}: ${line}`);
  if (problems.length) {
    console.error(`${problems.length} import rule(s) broken`);
    process.exit(1);
  }
  console.log(`engine imports: no cycle; lifecycle/, jury/ and expr/ pure; ${LAZY_MODULES.join(', ')} not loaded at start`);
}
