#!/usr/bin/env node
// The built CLI lives in dist/ (npm install runs `prepare`, which compiles engine/).
// Before any file system work starts libuv's thread pool: commits run several fsyncs at once.
process.env.UV_THREADPOOL_SIZE ??= '16';
// V8's settings for a command (tiering, heap growth): bin/v8-flags.js.
await import('./v8-flags.js');
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
