/**
 * Issue 14: nothing of the shipped pipeline is built into the engine. A second, tiny pipeline
 * (test/fixtures/tiny: other state, field, event, ledger and stage names; two judge stages, each
 * with its own verdict field; a promote stage named otherwise) runs end to end through the
 * command line with nothing but its YAML.
 */
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runIn } from '../cli/memory-io.js';
import { ROOT, tempDir } from '../helpers.js';

const DIR = path.join(ROOT, 'test', 'fixtures', 'tiny');

describe('a second pipeline, different in every name', () => {
  it('takes papers in, reviews them, judges them twice, files them, and replays a rubric', async () => {
    const env = { PIPELINE_STORE: path.join(tempDir('pipeline-tiny-'), 'store') };
    const cli = (...args: string[]) => runIn(['--dir', DIR, ...args], env);
    const intake = await cli('run', 'intake', '--json');
    expect(intake.code, intake.stderr).toBe(0);
    expect(JSON.parse(intake.stdout).counts).toMatchObject({ proposed: 4, declined: 1 });
    const drafts = JSON.parse((await cli('list', '--json')).stdout) as { id: string; source_id: string; opened_on: string }[];
    expect(drafts.map((paper) => paper.source_id)).toEqual(['note-1', 'note-2', 'note-3', 'note-5']);
    expect(drafts[0]!.opened_on).toMatch(/Z$/);
    const [one, two, three, five] = drafts.map((paper) => paper.id) as [string, string, string, string];
    for (const id of [one, two, three]) expect((await cli('accept', id)).code).toBe(0);
    expect((await cli('drop', five, 'not ours')).code).toBe(0);
    expect((await cli('accept', five)).stderr).toMatch(/is dropped; accept applies only to draft proposals/);

    const screen = await cli('run', 'screen', '--json');
    expect(screen.code, screen.stderr).toBe(0);
    expect(JSON.parse(screen.stdout).counts).toMatchObject({ shortlisted: 2, screened_out: 1 });
    const panel = await cli('run', 'panel', '--json');
    expect(panel.code, panel.stderr).toBe(0);
    expect(JSON.parse(panel.stdout).counts).toMatchObject({ published: 1, declined: 1 });

    expect(JSON.parse((await cli('status', '--json')).stdout)).toEqual({
      draft: 0,
      dropped: 1,
      submitted: 0,
      screened_out: 1,
      shortlisted: 0,
      published: 1,
      declined: 1,
    });
    const published = JSON.parse((await cli('show', one, '--json')).stdout);
    expect(Object.keys(published)).toEqual(['id', 'source_id', 'opened_on', 'status', 'paper', 'accepted_on', 'screening', 'ruling', 'archived_on']);
    expect(published.ruling).toMatchObject({ rubric_id: 'ruling', passed: true, reason: 'gate_passed' });
    expect((await cli('promote', one)).stdout).toMatch(/already promoted/);
    expect((await cli('promote', two)).stdout).toMatch(/refusals row is already recorded/);

    // Two judge stages: the one that takes the paper's status judges it; none takes a published one.
    const again = await runIn(['--dir', DIR, 'judge', one, '--verdicts', '-'], env, { input: '[]' });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is published; only submitted or shortlisted proposals are judged/);

    // Rubric tuning speaks the pipeline's names: published → declined.
    const stricter = path.join(tempDir('pipeline-tiny-rubric-'), 'ruling.yaml');
    writeFileSync(
      stricter,
      'id: ruling\ncriteria:\n  - { name: substance, weight: 0.6, min_pass: 0.5 }\n  - { name: clarity, weight: 0.4 }\nscore_threshold: 0.99\njudge_types: [editor, critic]\ngate_policy: majority\n',
    );
    const rescore = await cli('rescore', '--rubric', stricter, '--json');
    expect(rescore.code, rescore.stderr).toBe(0);
    expect(JSON.parse(rescore.stdout).rubrics[0].counts).toEqual({ published_to_declined: 0, declined_to_published: 0, judged_to_unjudged: 0 });
  }, 60_000);
});
