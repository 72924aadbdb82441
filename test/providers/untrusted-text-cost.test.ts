/**
 * SPEC §6: untrusted text has bounded cost. The shipped offline jury judges a proposal whose
 * rationale is built to make a backtracking pattern quadratic, and the shipped map transformer
 * reads such a record, through the engine: the outcome is decided (with quadratic patterns these
 * inputs take minutes, and the test's timeout would end it first).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StageDef } from '../../engine/config/types.js';
import { runStage } from '../../engine/stages/index.js';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { adversarialText, copyPipeline, proposalInput, proposalJson, tempDir, testEngine, type TestEngine, quietRun } from '../helpers.js';

const stageOf = (t: TestEngine, name: string): StageDef => t.pipeline.stages.find((stage) => stage.name === name)!;

describe('the shipped offline jury', () => {
  it('judges a proposal with a 600 KB adversarial rationale at every visibility with a jury', async () => {
    const t = await testEngine();
    const confirm = findReviewCommand(t.pipeline, 'confirm')!;
    const ids: string[] = [];
    for (const visibility of ['org', 'public']) {
      // Past the cap `propose` holds text to: as a proposal written by hand, or copied in, could be.
      const input = proposalInput({ rationale: `The lockfile format changed in pnpm 8. ${adversarialText(600_000)}` });
      const created = await t.engine.create(input.artifact_id, input.candidate, { stage: 'test', actor: 'cli' });
      if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
      expect((await runReviewCommand(t.engine, confirm, created.id, { visibility }, 'cli')).kind).toBe('committed');
      ids.push(created.id);
    }
    const summary = await runStage(t.engine, stageOf(t, 'judge'), quietRun());
    expect(summary.counts).toMatchObject({ approved: 2 });
    for (const id of ids) expect(proposalJson(t.storeDir, id).verdict).toMatchObject({ passed: true, reason: 'gate_passed' });
  });

  it('still finds what it looks for after the adversarial runs', async () => {
    const t = await testEngine();
    const input = proposalInput({ rationale: `${adversarialText(300_000)} Reach it at build.corp or ops@example.com.` });
    const created = await t.engine.create(input.artifact_id, input.candidate, { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
    await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, created.id, { visibility: 'public' }, 'cli');
    await runStage(t.engine, stageOf(t, 'judge'), quietRun());
    const verdict = proposalJson(t.storeDir, created.id).verdict;
    expect(verdict).toMatchObject({ passed: false, failed_criterion: 'disclosure' });
    expect(verdict.judges.map((judge: { criterion_scores: Record<string, number> }) => judge.criterion_scores['disclosure'])).toEqual([0.5, 0.5]);
  });
});

describe('the shipped map transformer', () => {
  it('reads a record whose Versions line and detail are 400 KB of adversarial runs', async () => {
    // The field cap would decline this record first: raise it, so that the patterns meet the text.
    const dir = copyPipeline();
    const stageFile = path.join(dir, 'stages', 'transform.yaml');
    writeFileSync(
      stageFile,
      readFileSync(stageFile, 'utf8')
        .replace('max_field_bytes: 65536', 'max_field_bytes: 2097152')
        .replace('max_record_bytes: 1048576', 'max_record_bytes: 4194304'),
    );
    const t = await testEngine({ dir });
    const source = tempDir('pipeline-source-');
    const record = (id: string, versions: string) => ({
      id,
      kind: 'decision',
      project_key: 'a1b2c3d4e5f6',
      session_id: 's-1',
      created_at: '2026-10-10T10:00:00Z',
      files: [],
      summary: 'Builds broke after an upgrade',
      detail: `Build ${'1'.repeat(200_000)}!\nResolution: pinned the toolchain.\nVersions: ${versions}\nLater on 4.1 it worked.`,
    });
    // No item can be read out of the first line (no stack: schema_invalid); the second has one after the runs.
    writeFileSync(path.join(source, 'a.json'), JSON.stringify(record('01JF0000000000000000000001', `${'a'.repeat(200_000)}!`)));
    writeFileSync(path.join(source, 'b.json'), JSON.stringify(record('01JF0000000000000000000002', `${'a,'.repeat(100_000)} vitest >=4 <5`)));
    const summary = await runStage(t.engine, stageOf(t, 'transform'), quietRun({ source }));
    expect(summary.counts).toMatchObject({ proposed: 1, declined: 1 });
    const declined = readFileSync(path.join(t.storeDir, 'declined.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(declined).toEqual([expect.objectContaining({ artifact_id: '01JF0000000000000000000001', reason: 'schema_invalid' })]);
  });
});
