/**
 * SPEC §6, §7: on SIGINT, SIGTERM or SIGHUP the run kills its providers' process groups before it
 * exits — a paid judge program must not keep running (and costing) after the run is gone — and
 * stops as on Ctrl-C, printing its summary. The real binary runs a judge whose program lingers and
 * starts a grandchild; after the signal both are gone, the run prints its summary and exits 128 +
 * the signal's number, and the proposal is untouched (still confirmed).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { cliIn, cliSpawn, cliStore, proposalFile } from '../cli/cli.js';
import { copyPipeline, proposalInput } from '../helpers.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Alive and not a zombie (a container's init may never reap killed orphans). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = `/proc/${pid}/stat`;
  return !(existsSync(stat) && / Z /.test(readFileSync(stat, 'utf8')));
}

/** Waits up to 10 s (a loaded machine reaps slowly); returns as soon as the process is gone. */
async function eventuallyDead(pid: number): Promise<boolean> {
  for (let i = 0; i < 500 && isAlive(pid); i++) await sleep(20);
  return !isAlive(pid);
}

/** A copy of the shipped pipeline whose two judges run the lingering fixture (paid, so the run needs --yes). */
function lingeringJury(): { dir: string; pids: string } {
  const dir = copyPipeline();
  const pids = path.join(dir, 'pids');
  mkdirSync(pids);
  const yaml = path.join(dir, 'pipeline.yaml');
  const command = [process.execPath, path.join(FIXTURES, 'linger.mjs'), pids].map((part) => `'${part}'`).join(' ');
  writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('    command: claude -p', `    command: "${command}"\n    attempts: 1`));
  const judge = path.join(dir, 'stages', 'judge.yaml');
  writeFileSync(
    judge,
    readFileSync(judge, 'utf8').replace('standard: standard-checks', 'standard: claude').replace('adversarial: adversarial-checks', 'adversarial: claude'),
  );
  return { dir, pids };
}

describe('a signal to a judge run', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
    ['SIGINT', 130],
  ] as const)(
    '%s kills the judge programs and what they started, prints the summary, then exits %i; the proposal stays confirmed',
    async (signal, code) => {
      const { dir, pids } = lingeringJury();
      // Whatever happens, nothing this test started outlives it (its temp directory may be gone by then).
      let started: string[] = [];
      onTestFinished(() => {
        for (const file of started) {
          try {
            process.kill(Number(file.split('.')[0]), 'SIGKILL');
          } catch {
            // Gone, as it should be.
          }
        }
      });
      const { store, env } = cliStore();
      // Set-up in process; the run that gets the signal is the real binary.
      const id = (await cliIn(['--dir', dir, 'propose', '-'], { env, input: JSON.stringify(proposalInput()) })).stdout.trim();
      expect((await cliIn(['--dir', dir, 'confirm', id, '--visibility', 'org'], { env })).code).toBe(0);
      const run = cliSpawn(['--dir', dir, 'run', 'judge', '--yes'], { env });
      let stdout = '';
      run.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const exited = new Promise<number | null>((resolve) => run.once('close', (status) => resolve(status)));
      const written = () => (started = readdirSync(pids));
      // Up to 30 s for the run to start its four judge programs: beside a torture run and two unit
      // suites this whole test took 14 s (2026-12-06), against 1 s alone.
      for (let i = 0; i < 1500 && written().length < 4; i++) await sleep(20);
      expect(written()).toHaveLength(4);
      run.kill(signal);
      expect(await exited).toBe(code);
      expect(stdout).toMatch(/^judge: 0 approved, 0 rejected, .* \(interrupted\)$/m);
      for (const file of written()) expect(await eventuallyDead(Number(file.split('.')[0])), file).toBe(true);
      expect(proposalFile(store, id).status).toBe('confirmed');
    },
    120_000,
  );
});
