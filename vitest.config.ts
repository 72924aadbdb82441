import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two projects. `unit` is the everyday suite (`npm test`). `torture` (`npm run test:torture`) is
 * the tests that are about real processes under load — killed, racing, crashing at every write —
 * the fuzzers, and a few whole sessions across processes and backends: minutes of work that `npm test` leaves out and CI runs as a step of its own.
 * The browser tests have their own configuration (vitest.e2e.config.ts).
 */
// A Node process started with NODE_EXTRA_CA_CERTS parses that certificate bundle before it runs a
// line: 40 ms a process on the development VM, whose environment sets it for a proxy. The tests
// start many Node processes (the binary, judge programs, workers) and make no TLS connection, so
// they and the processes they start run without it: 1–2 s of `npm test`'s ~53 s there, in
// alternating runs (docs/performance.md, 2026-12-07, morning). The benchmark leaves it out for
// the same reason (bench/lib/engine.js).
delete process.env['NODE_EXTRA_CA_CERTS'];

const TORTURE = [
  'test/torture/**/*.test.ts',
  'test/fuzz/**/*.test.ts',
  // Whole sessions across processes and backends: the demo end to end, the command-line session on
  // files and on PostgreSQL, judge calls held in flight against leases (10-20 s each).
  'test/scripts/demo.test.ts',
  'test/backends/**/*.test.ts',
  'test/store/postgres-behaviour.test.ts',
  'test/store/postgres-group-faults.test.ts',
];

export default defineConfig({
  test: {
    // One throwaway PostgreSQL server per project that runs (skipped with a line where its binaries are missing).
    globalSetup: ['test/pg/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each test file gets its own temp store; files run in parallel.
    pool: 'forks',
    projects: [
      // A worker per CPU (vitest's default leaves one out: a single worker on a 2-CPU machine,
      // idle while a test waits on fsync, a child process or the database). Files share a worker's
      // modules (isolate: false): each file re-importing the engine cost ~1.5 s of CPU, two thirds
      // of the suite. The tests keep no state between files — each has its own temp store and
      // environment — and the suite passes with its files shuffled (--sequence.shuffle.files).
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', ...TORTURE, 'node_modules/**'],
          maxWorkers: os.availableParallelism(),
          isolate: false,
        },
      },
      { extends: true, test: { name: 'torture', include: TORTURE } },
    ],
  },
});
