/**
 * SPEC §7: SIGTERM (a service manager, `kill`) and SIGHUP (a closed terminal) stop a run the way
 * Ctrl-C does: nothing new is claimed, calls in flight are dropped, commits in flight finish, the
 * summary is printed, and the exit code is 128 + the signal's number. No proposal is left half
 * recorded: each is untouched or judged with its one verdict row (and its promotion with its
 * row), and no commit is left in the journal for a later command to finish.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { copyPipeline, proposalInput, testEngine } from '../helpers.js';
import { auditById, readProposals, sleep, start, storeEnv, verdictRows } from './harness.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers');
const COUNT = 24;
const SCORES = { grounding: 0.95, scope_accuracy: 0.95, generality: 0.95, disclosure: 0.95 };

/** A copy of the shipped pipeline whose two judges answer an approving verdict after `ms` milliseconds. */
function slowJury(ms: number): string {
  const dir = copyPipeline();
  const verdict = path.join(dir, 'verdict.json');
  writeFileSync(verdict, JSON.stringify({ score: 0.95, passed: true, criterion_scores: SCORES, feedback_summary: 'sound' }));
  const command = [process.execPath, path.join(FIXTURES, 'slow-verdict.mjs'), verdict, String(ms)].map((part) => `'${part}'`).join(' ');
  const yaml = path.join(dir, 'pipeline.yaml');
  writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('    command: claude -p', `    command: "${command}"\n    paid: false\n    attempts: 1`));
  const judge = path.join(dir, 'stages', 'judge.yaml');
  writeFileSync(
    judge,
    readFileSync(judge, 'utf8').replace('standard: standard-checks', 'standard: claude').replace('adversarial: adversarial-checks', 'adversarial: claude'),
  );
  return dir;
}

describe('a judge run stopped by a signal', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
    ['SIGINT', 130],
  ] as const)(
    '%s stops the run as Ctrl-C does: prints the summary, exits %i, leaves nothing half recorded',
    async (signal, code) => {
      const dir = slowJury(300);
      const t = await testEngine({ dir });
      const confirm = findReviewCommand(t.pipeline, 'confirm')!;
      for (let i = 0; i < COUNT; i++) {
        const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
        if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
        await runReviewCommand(t.engine, confirm, created.id, { visibility: 'org' }, 'cli');
      }
      const judged = () => [...auditById(t.storeDir).values()].filter((rows) => verdictRows(rows).length > 0).length;

      const { child, done } = start(['--dir', dir, 'run', 'judge', '--concurrency', '4', '--json'], storeEnv(t.storeDir));
      for (let i = 0; i < 600 && judged() === 0; i++) await sleep(25);
      expect(judged()).toBeGreaterThan(0);
      child.kill(signal);
      const stopped = await done;

      expect(stopped.code, stopped.stderr).toBe(code);
      expect(stopped.stderr).toContain(`interrupted${signal === 'SIGINT' ? '' : ` (${signal})`}: finishing what is in flight, claiming nothing new`);
      expect(stopped.stderr).not.toMatch(/internal error|\n\s+at /);
      const summary = JSON.parse(stopped.stdout);
      expect(summary.stage).toBe('judge');

      const proposals = readProposals(t.storeDir);
      const audit = auditById(t.storeDir);
      let approved = 0;
      for (const [id, proposal] of proposals) {
        const rows = audit.get(id) ?? [];
        const verdicts = verdictRows(rows);
        const promotions = rows.filter((row) => row['event'] === 'promote');
        if (proposal['status'] === 'confirmed') {
          expect(verdicts, id).toEqual([]);
          expect(proposal['promoted_at'], id).toBeUndefined();
        } else {
          expect(proposal['status'], id).toBe('approved');
          expect(
            verdicts.map((row) => row['to']),
            id,
          ).toEqual(['approved']);
          expect(promotions, id).toHaveLength(proposal['promoted_at'] === undefined ? 0 : 1);
          approved++;
        }
        expect(rows.at(-1)?.['to'], id).toBe(proposal['status']);
      }
      // It stopped early, and the summary counts exactly what it recorded.
      expect(approved).toBeLessThan(COUNT);
      expect(summary.counts.approved).toBe(approved);
      // The run's journal (named by its pid; this test's own engine has one too) is gone: nothing was left half applied.
      const journal = path.join(t.storeDir, '.journal');
      expect((existsSync(journal) ? readdirSync(journal) : []).filter((name) => name.includes(`.${child.pid}.`))).toEqual([]);
    },
    120_000,
  );
});
