/** vitest globalSetup: one throwaway PostgreSQL server per project in the run (see server.ts). */
import type { TestProject } from 'vitest/node';
import { postgresBin, startPostgres } from './server.js';

export default async function setup(project: TestProject): Promise<() => void> {
  const bin = postgresBin();
  if (!bin) {
    if (process.env['CI'] === 'true') throw new Error("PostgreSQL binaries are missing (/usr/lib/postgresql/<v>/bin): CI must install Debian's postgresql");
    process.stderr.write('PostgreSQL tests skipped: no PostgreSQL binaries in /usr/lib/postgresql (apt-get install postgresql)\n');
    project.provide('pgUrl', '');
    return () => {};
  }
  // Each project's server is its own: a run of both projects stops both.
  const server = await startPostgres(bin);
  project.provide('pgUrl', server.url);
  return () => server.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string;
  }
}
