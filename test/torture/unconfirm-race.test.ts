/**
 * SPEC §4: a commit only applies to the proposal as it was read, so a human command racing a run
 * is never silently overwritten. Here people take confirmations back — through the review
 * command in this process and through the real binary — while a real `pipeline run judge` works
 * through the same proposals. Afterwards each raced proposal shows exactly one winner: either
 * the person (pending, no verdict; the run left it unjudged) or the run (judged; the unconfirm
 * was refused, naming the status), and events.jsonl tells the same story as the files.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { auditById, confirmedStore, readProposals, readRows, run, sleep, start, storeEnv, verdictRows } from './harness.js';

const PROPOSALS = 240;

it('an unconfirm racing a judge run is either refused naming the verdict or leaves the proposal pending and unjudged', async () => {
  const t = await confirmedStore(PROPOSALS, ['org', 'public']);
  const env = storeEnv(t.storeDir);
  const eventsFile = path.join(t.storeDir, 'events.jsonl');
  const rowsBefore = readRows(eventsFile).rows.length;
  const sorted = [...t.ids].sort();
  // Every third proposal is raced, latest first, so the race runs against the run's order.
  const raced = sorted.filter((_, index) => index % 3 === 1).reverse();
  const byBinary = new Set(raced.filter((_, index) => index % 8 === 0));

  const judging = start(['run', 'judge', '--yes', '--json', '--concurrency', '4'], env);
  // Start once the run has judged something, and race that very proposal too: it must refuse.
  let first: string | undefined;
  for (let waited = 0; !first && waited < 20_000; waited += 5) {
    if (existsSync(eventsFile) && statSync(eventsFile).size > 0)
      first = verdictRows(readRows(eventsFile).rows.slice(rowsBefore))[0]?.['id'] as string | undefined;
    if (!first) await sleep(5);
  }
  expect(first).toBeDefined();
  const contenders = [first!, ...raced.filter((id) => id !== first)];

  const unconfirm = findReviewCommand(t.pipeline, 'unconfirm')!;
  const human = new Map<string, { won: boolean; message: string }>();
  const binaryRuns = [...byBinary]
    .filter((id) => id !== first)
    .map(async (id) => {
      const result = await run(['unconfirm', id], env);
      expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
      expect([0, 1], result.stderr).toContain(result.code);
      human.set(id, { won: result.code === 0, message: result.stderr });
    });
  for (const id of contenders.filter((candidate) => !byBinary.has(candidate) || candidate === first)) {
    const outcome = await runReviewCommand(t.engine, unconfirm, id, {}, 'cli');
    expect(['committed', 'refused'], JSON.stringify(outcome)).toContain(outcome.kind);
    human.set(id, { won: outcome.kind === 'committed', message: outcome.kind === 'refused' ? outcome.message : '' });
  }
  await Promise.all(binaryRuns);
  const judged = await judging.done;
  expect(judged.stderr).not.toMatch(/internal error|\n\s+at /);
  expect([0, 2]).toContain(judged.code);
  const summary = JSON.parse(judged.stdout) as { unjudged: string[]; refused: string[] };
  expect(summary.refused).toEqual([]);

  const proposals = readProposals(t.storeDir);
  const audit = auditById(t.storeDir);
  const wins = { human: 0, run: 0 };
  for (const [id, { won, message }] of human) {
    const proposal = proposals.get(id)!;
    const rows = audit.get(id) ?? [];
    const unconfirmRows = rows.filter((row) => row['event'] === 'unconfirm');
    if (won) {
      wins.human++;
      expect(proposal['status'], id).toBe('pending');
      for (const field of ['verdict', 'judged_at', 'promoted_at', 'visibility', 'confirmed_at']) expect(proposal, id).not.toHaveProperty(field);
      expect(verdictRows(rows), id).toEqual([]);
      expect(unconfirmRows, id).toHaveLength(1);
      expect(existsSync(path.join(t.storeDir, 'approved', `${id}.json`)), id).toBe(false);
    } else {
      wins.run++;
      expect(['approved', 'rejected'], id).toContain(proposal['status']);
      expect(message, id).toContain(`${id} is ${proposal['status']}`);
      expect(proposal['verdict'], id).toEqual(expect.objectContaining({ passed: proposal['status'] === 'approved' }));
      expect(
        verdictRows(rows).map((row) => row['to']),
        id,
      ).toEqual([proposal['status']]);
      expect(unconfirmRows, id).toEqual([]);
    }
  }
  expect(wins.run).toBeGreaterThanOrEqual(1);
  expect(wins.human).toBeGreaterThanOrEqual(1);
  // Whatever the run left unjudged, a person took back; nothing unraced was left behind.
  for (const id of summary.unjudged) expect(human.get(id)?.won, id).toBe(true);
  // The audit log ends, for every proposal, in the status its file has.
  for (const id of t.ids) expect(audit.get(id)?.at(-1)?.['to'], id).toBe(proposals.get(id)!['status']);
  const declined = readRows(path.join(t.storeDir, 'declined.jsonl')).rows.map((row) => row['id']);
  for (const [id, { won }] of human) if (won) expect(declined, id).not.toContain(id);
}, 120_000);
