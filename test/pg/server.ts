/**
 * A throwaway PostgreSQL server for the tests, started from the machine's binaries (Debian's
 * `postgresql`, /usr/lib/postgresql/<v>/bin): initdb into a temp directory (as the `postgres`
 * user when running as root: initdb refuses root), listening on a unix socket and 127.0.0.1 on
 * a free port, stopped (immediately) and removed afterwards. Never a mock, never an emulation.
 *
 * Used as a vitest globalSetup: the URL reaches the tests as `inject('pgUrl')` (empty when the
 * binaries are missing — the PostgreSQL tests then skip with one line; under CI=true that is a
 * failure instead).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface PgServer {
  url: string;
  stop(): void;
}

/** The directory of the newest installed PostgreSQL's binaries, or undefined. */
export function postgresBin(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((name) => /^\d+$/.test(name) && existsSync(path.join(base, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(base, versions[0]!, 'bin') : undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A detached watchdog that stops the server (and removes its directory) once the process that
 * started it is gone without stopping it: killed, or ended by its output closing under it
 * (`vitest | head`). Two servers left by such runs were found still up an hour later.
 */
function watchdog(stop: string[], dir: string): ChildProcess {
  const script = `const [parent, dir, ...stop] = JSON.parse(process.argv[1]);
const alive = () => { try { process.kill(parent, 0); return true; } catch (error) { return error.code === 'EPERM'; } };
const timer = setInterval(() => {
  if (alive()) return;
  clearInterval(timer);
  require('node:child_process').spawnSync(stop[0], stop.slice(1), { stdio: 'ignore' });
  require('node:fs').rmSync(dir, { recursive: true, force: true });
}, 500);`;
  const child = spawn(process.execPath, ['-e', script, JSON.stringify([process.pid, dir, ...stop])], { detached: true, stdio: 'ignore' });
  child.unref();
  return child;
}

/** Start a server; throws with the server's own words when it does not come up. */
export async function startPostgres(bin: string): Promise<PgServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pipeline-pg-'));
  const data = path.join(dir, 'data');
  const sock = path.join(dir, 'sock');
  const asRoot = process.getuid?.() === 0;
  // As root, everything runs as the postgres user, which must own the temp directory.
  const commandOf = (program: string, args: string[]) =>
    asRoot ? ['runuser', '-u', 'postgres', '--', path.join(bin, program), ...args] : [path.join(bin, program), ...args];
  const run = (program: string, args: string[]) => {
    const command = commandOf(program, args);
    const result = spawnSync(command[0]!, command.slice(1), { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${program} failed: ${result.stderr || result.stdout}`);
  };
  execFileSync('mkdir', ['-p', sock]);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    chownSync(sock, uid, gid);
  }
  chmodSync(dir, 0o755);
  // initdb's own "Permission denied" would not say why: a private TMPDIR (0700, owned by root).
  if (asRoot && spawnSync('runuser', ['-u', 'postgres', '--', 'test', '-x', dir]).status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `the postgres user cannot reach ${dir}: as root, the test server runs as postgres, and some directory above it (TMPDIR=${os.tmpdir()}) is closed to other users; point TMPDIR at one they can traverse, such as /tmp`,
    );
  }
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  const port = await freePort();
  // fsync stays on: durability is part of what the tests and the bench stand for.
  run('pg_ctl', [
    '-D',
    data,
    '-w',
    '-t',
    '60',
    '-l',
    path.join(dir, 'log'),
    'start',
    '-o',
    `-k ${sock} -h 127.0.0.1 -p ${port} -c max_connections=200 -c idle_in_transaction_session_timeout=60000`,
  ]);
  const stopArgs = ['-D', data, '-m', 'immediate', 'stop'];
  const guard = watchdog(commandOf('pg_ctl', stopArgs), dir);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      guard.kill();
      try {
        run('pg_ctl', stopArgs);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
