// Types of scripts/check-imports.js for the tests that call it in-process.
export interface Import {
  specifier: string;
  kind: 'value' | 'type' | 'lazy';
  line: number;
  /** The engine file it names (relative to the root), for a relative import. */
  file?: string;
  /** The bare module it names (without `node:`), otherwise. */
  module?: string;
}
export const PURE_LAYERS: string[];
export const IMPURE_MODULES: string[];
export function importsOf(file: string, text: string): Omit<Import, 'file' | 'module'>[];
export function readGraph(root: string): Map<string, Import[]>;
export function findCycles(graph: Map<string, Import[]>): string[][];
export function findImpurities(graph: Map<string, Import[]>): { file: string; line: number; what: string; via: string[] }[];
export const START: string;
export const LAZY_MODULES: string[];
export function findEagerLoads(graph: Map<string, Import[]>): { file: string; line: number; what: string; via: string[] }[];
export function checkImports(root: string): string[];
