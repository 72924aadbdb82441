/**
 * SPEC §4: a crash between a commit's steps (proposal written, audit row not yet appended) is
 * repaired by the next command on that proposal, and by the next batch run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PromoteStageDef } from '../../engine/config/types.js';
import { runStage } from '../../engine/runner/stage-runs.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { proposalInput, testEngine } from '../helpers.js';

const rows = (store: string) => readFileSync(path.join(store, 'events.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
function dropLastRow(store: string): void {
  const file = path.join(store, 'events.jsonl');
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  writeFileSync(file, `${lines.slice(0, -1).join('\n')}\n`);
}

describe('audit repair', () => {
  it('the next command on the proposal appends the row a crash left out, before its own', async () => {
    const { engine, storeDir, pipeline } = await testEngine();
    const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    const id = created.kind === 'committed' ? created.id : '';
    await runReviewCommand(engine, findReviewCommand(pipeline, 'confirm')!, id, { visibility: 'org' }, 'cli');
    dropLastRow(storeDir);
    await runReviewCommand(engine, findReviewCommand(pipeline, 'unconfirm')!, id, {}, 'cli');
    expect(rows(storeDir).map((row) => `${row.event}:${row.from}→${row.to}`)).toEqual(['create:null→pending', 'confirm:pending→confirmed', 'unconfirm:confirmed→pending']);
  });

  it('a repeat appends a missing audit row', async () => {
    const { engine, storeDir, pipeline } = await testEngine();
    const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    const id = created.kind === 'committed' ? created.id : '';
    await runReviewCommand(engine, findReviewCommand(pipeline, 'pass')!, id, {}, 'cli');
    dropLastRow(storeDir);
    await runReviewCommand(engine, findReviewCommand(pipeline, 'pass')!, id, {}, 'cli');
    expect(rows(storeDir).map((row) => `${row.event}:${row.to}`)).toEqual(['create:pending', 'pass:passed']);
  });

  it('a batch run adds the rows missing for any proposal, once', async () => {
    const { engine, storeDir, pipeline } = await testEngine();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
      ids.push(created.kind === 'committed' ? created.id : '');
    }
    await runReviewCommand(engine, findReviewCommand(pipeline, 'confirm')!, ids[0]!, { visibility: 'private' }, 'cli');
    dropLastRow(storeDir);
    dropLastRow(storeDir);
    const stage = pipeline.stages.find((candidate) => candidate.kind === 'promote') as PromoteStageDef;
    const notes: string[] = [];
    const options = { concurrency: 2, dryRun: false, yes: true, useCache: true, cwd: storeDir, interactive: false, ask: async () => false, progress: () => ({ tick() {}, done() {} }), note: (line: string) => notes.push(line) };
    await runStage(engine, stage, options);
    await runStage(engine, stage, options);
    expect(notes.filter((note) => /added 2 audit rows/.test(note))).toHaveLength(1);
    const last = rows(storeDir).slice(-2).map((row) => `${row.id}:${row.event}:${row.from}→${row.to}`);
    expect(last.sort()).toEqual([`${ids[0]}:confirm:pending→confirmed`, `${ids[2]}:create:null→pending`].sort());
  });
});
