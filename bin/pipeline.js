#!/usr/bin/env node
// The built CLI lives in dist/ (npm install runs `prepare`, which compiles engine/).
// Before any file system work starts libuv's thread pool: commits run several fsyncs at once.
process.env.UV_THREADPOOL_SIZE ??= '16';
// V8's settings for a command (tiering, heap growth): bin/v8-flags.js.
await import('./v8-flags.js');
const { main } = await import('../dist/pipeline.js');

let settled = false;
main(process.argv.slice(2)).then(
  (code) => {
    settled = true;
    process.exitCode = code;
  },
  (error) => {
    settled = true;
    const detail = process.env.PIPELINE_DEBUG && error && error.stack ? error.stack : String(error && error.message ? error.message : error);
    process.stderr.write(`pipeline: internal error: ${detail}\n`);
    process.exitCode = 1;
  },
);
// Nothing left to do while the command has not finished: something it waited for can never come
// (a bug). Exit 0 would say the work was done; say it was not.
process.on('beforeExit', () => {
  if (settled) return;
  settled = true;
  process.stderr.write(
    'pipeline: internal error: the command stopped before it finished (it waited for something that can never happen); nothing more was done\n',
  );
  process.exitCode = 1;
});
