#!/usr/bin/env node
// The built CLI lives in dist/ (npm install runs `prepare`, which compiles engine/).
// Before any file system work starts libuv's thread pool: commits run several fsyncs at once.
process.env.UV_THREADPOOL_SIZE ??= '16';
// A command lives for one batch, not for hours: V8's default tiering (tuned for long-lived pages)
// optimizes a function after little use. On Node 20, `run judge --yes` on 1,000 proposals took
// 1.4–1.6 s of user CPU instead of 0.8–1.2 s (tmpfs), optimizing code it then barely used; at
// 10,000 a larger budget before tiering up is within the noise (docs/design.md, "The command line
// tiers up later"; docs/performance.md, 2026-12-04, evening). Node 20's V8 only: later ones tier
// through Maglev, which was not measured. A budget given on the command line
// (`node --interrupt-budget=N bin/pipeline.js …`, `-`/`_` spellings alike) is left as it is.
const budgetGiven = process.execArgv.some((arg) => /^--?interrupt-budget(=|$)/.test(arg.replaceAll('_', '-')));
if (process.versions.node.startsWith('20.') && !budgetGiven) {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--interrupt-budget=500000');
}
const { main } = await import('../dist/pipeline.js');

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    const detail = process.env.PIPELINE_DEBUG && error && error.stack ? error.stack : String(error && error.message ? error.message : error);
    process.stderr.write(`pipeline: internal error: ${detail}\n`);
    process.exitCode = 1;
  },
);
