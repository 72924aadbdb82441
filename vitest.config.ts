import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**'],
    // One throwaway PostgreSQL server for the run (skipped with a line where its binaries are missing).
    globalSetup: ['test/pg/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each test file gets its own temp store; files run in parallel.
    pool: 'forks',
  },
});
