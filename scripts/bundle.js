#!/usr/bin/env node
// Build step: bundle the CLI into one file (dist/pipeline.js). One file loads much faster than the
// several hundred modules of the engine and its dependencies, which keeps cold starts short.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// Chunk names carry a content hash: without this, every build would leave the last one's behind.
rmSync(path.join(root, 'dist', 'chunks'), { recursive: true, force: true });
await build({
  entryPoints: { pipeline: path.join(root, 'dist', 'engine', 'cli', 'main.js'), engine: path.join(root, 'dist', 'engine', 'index.js') },
  outdir: path.join(root, 'dist'),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
  // pg loads its optional native binding only when asked; the store never asks.
  external: ['pg-native'],
  // Some dependencies are CommonJS and require() node built-ins.
  banner: { js: "import { createRequire as __pipelineRequire } from 'node:module'; const require = __pipelineRequire(import.meta.url);" },
});
console.log('bundled dist/pipeline.js and dist/engine.js');
