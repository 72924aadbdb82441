#!/usr/bin/env node
// The built CLI lives in dist/ (npm install runs `prepare`, which compiles engine/).
// Before any file system work starts libuv's thread pool: commits run several fsyncs at once.
process.env.UV_THREADPOOL_SIZE ??= '16';
// A command lives for one batch, not for hours: V8's default tiering (tuned for long-lived pages)
// optimizes a function after little use, and a run of a few thousand proposals spent a third of
// its CPU compiling code it then barely used. A larger budget before tiering up keeps the warm-up
// cheap and still optimizes what stays hot (docs/performance.md, 2026-12-04 evening). A budget
// given on the command line (`node --interrupt-budget=N bin/pipeline.js …`) is left as it is.
if (!process.execArgv.some((arg) => arg.replaceAll('_', '-').startsWith('--interrupt-budget'))) {
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
