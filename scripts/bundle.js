#!/usr/bin/env node
// Build step: bundle the CLI into one file (dist/pipeline.js). One file loads much faster than the
// several hundred modules of the engine and its dependencies, which keeps cold starts short.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/**
 * pg asks, as its module loads, whether it runs in a Cloudflare Worker; on Node 20 (no global
 * `navigator`) it finds out by constructing a `Response`, which loads Node's fetch (undici):
 * ~45 ms of every command that opens a PostgreSQL store, for an answer this bundle knows (its
 * platform is node). The question is taken out at build time; a pg whose source no longer
 * reads as expected fails the build rather than being bundled unchanged.
 */
const pgOnNode = {
  name: 'pg-on-node',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const asked = 'if (isCloudflareRuntime()) {';
      if (source.split(asked).length !== 2) throw new Error(`${args.path}: expected one "${asked}" (pg changed: look at scripts/bundle.js)`);
      return { contents: source.replace(asked, 'if (false) {'), loader: 'js' };
    });
  },
};
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
  plugins: [pgOnNode],
  // Some dependencies are CommonJS and require() node built-ins.
  banner: { js: "import { createRequire as __pipelineRequire } from 'node:module'; const require = __pipelineRequire(import.meta.url);" },
});
console.log('bundled dist/pipeline.js and dist/engine.js');
