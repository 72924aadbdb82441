/**
 * `pipeline rescore` through the command line (in process): the report, --json, refusals, and
 * proof that it writes nothing and calls no model.
 */
import { execFileSync } from 'node:child_process';
import { unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { proposalInput, ROOT, tempDir, testEngine, type TestEngine } from '../helpers.js';
import { commitJudged, declinedRow, expectOk, ORG, panel, runCli, snapshotTree, type Judged } from './recorded.js';

const FIXTURES = 'test/fixtures/rescore';
const rescore = (storeDir: string, ...args: string[]) => runCli(['--dir', ROOT, '--store', storeDir, 'rescore', ...args], { cwd: ROOT });

interface Scenario {
  t: TestEngine;
  /** Approved; its lowest generality score is 0.7, below the raised floor of 0.8. */
  lowGenerality: Judged;
  /** Approved with room to spare under every fixture. */
  strong: Judged;
  /** Rejected below threshold (0.74); its proposal file is gone, only its declined row is left. */
  gone: Judged;
  /** Rejected on the generality floor; its declined row was tampered with, but the file is there. */
  shadowed: Judged;
}

async function scenario(): Promise<Scenario> {
  const t = await testEngine();
  const lowGenerality = await commitJudged(t, ORG, panel(0.9, 0.9, 0.7));
  const strong = await commitJudged(t, ORG, panel(0.95, 0.95, 0.95));
  const gone = await commitJudged(t, ORG, panel(0.7, 0.7, 0.9));
  const shadowed = await commitJudged(t, ORG, panel(1, 0.9, 0.3));
  await commitJudged(t, null);
  await t.store.appendLedger('declined', {
    artifact_id: '01JBQ999999999999999999999',
    reason: 'no_versions',
    detail: null,
    declined_at: '2026-11-01T12:00:00Z',
  });
  await t.store.appendLedger('declined', declinedRow(gone));
  await t.store.appendLedger('declined', { ...declinedRow(shadowed), verdict: { ...shadowed.verdict, judges: panel(0.1, 0.1, 0.1) } });
  unlinkSync(path.join(t.storeDir, 'proposals', `${gone.id}.json`));
  return { t, lowGenerality, strong, gone, shadowed };
}

describe('pipeline rescore', () => {
  it('prints a summary line per rubric, in the order given, then a table of the flips', async () => {
    const s = await scenario();
    const result = await rescore(
      s.t.storeDir,
      '--rubric',
      `${FIXTURES}/raised-floor.yaml`,
      '--rubric',
      `${FIXTURES}/reweighted.yaml`,
      '--rubric',
      `${FIXTURES}/without-generality.yaml`,
    );
    expectOk(result);
    const id = 'ID'.padEnd(26);
    expect(result.stdout).toBe(
      [
        `${FIXTURES}/raised-floor.yaml (lesson-promotion): 4 recorded panels — 3 stay, 1 approved → rejected, 0 rejected → approved, 0 judged → unjudged; 1 no-jury proposal out of scope`,
        '',
        `  ${id}  CHANGE               AGGREGATE        REASON`,
        `  ${s.lowGenerality.id}  approved → rejected  0.8600 → 0.8600  gate_passed → criterion_floor (generality)`,
        '',
        `${FIXTURES}/reweighted.yaml (lesson-promotion): 4 recorded panels — 3 stay, 0 approved → rejected, 1 rejected → approved, 0 judged → unjudged; 1 no-jury proposal out of scope`,
        '',
        `  ${id}   CHANGE               AGGREGATE        REASON`,
        `  ${s.gone.id}*  rejected → approved  0.7400 → 0.8000  below_threshold → gate_passed`,
        '  * read from declined.jsonl: the proposal file is gone',
        '',
        `${FIXTURES}/without-generality.yaml (lesson-promotion): 4 recorded panels — 3 stay, 0 approved → rejected, 1 rejected → approved, 0 judged → unjudged; 1 no-jury proposal out of scope`,
        '',
        `  ${id}  CHANGE               AGGREGATE        REASON`,
        `  ${s.shadowed.id}  rejected → approved  0.8250 → 0.9550  criterion_floor (generality) → gate_passed`,
        '',
      ].join('\n'),
    );
  });

  it('--json gives the same data, one entry per --rubric in order', async () => {
    const s = await scenario();
    const result = await rescore(s.t.storeDir, '--json', '--rubric', `${FIXTURES}/reweighted.yaml`, '--rubric', `${FIXTURES}/raised-floor.yaml`);
    expectOk(result);
    const report = JSON.parse(result.stdout) as { rubrics: Record<string, unknown>[] };
    expect(report.rubrics.map((entry) => entry['file'])).toEqual([`${FIXTURES}/reweighted.yaml`, `${FIXTURES}/raised-floor.yaml`]);
    expect(report.rubrics[0]).toEqual({
      file: `${FIXTURES}/reweighted.yaml`,
      rubric_id: 'lesson-promotion',
      considered: 4,
      stay: 3,
      no_jury: 1,
      other_rubrics: 0,
      flips: {
        approved_to_rejected: [],
        rejected_to_approved: [
          {
            id: s.gone.id,
            source: 'ledger',
            from: 'rejected',
            to: 'approved',
            old_reason: 'below_threshold',
            new_reason: 'gate_passed',
            old_aggregate: s.gone.verdict.aggregate_score,
            new_aggregate: expect.closeTo(0.8, 12),
            old_failed_criterion: null,
            new_failed_criterion: null,
          },
        ],
        judged_to_unjudged: [],
      },
      counts: { approved_to_rejected: 0, rejected_to_approved: 1, judged_to_unjudged: 0 },
    });
  });

  it('applies the default minimum coverage (0.6) to an edited rubric that leaves it out', async () => {
    const s = await scenario();
    const result = await rescore(s.t.storeDir, '--json', '--rubric', `${FIXTURES}/unscored-criterion.yaml`);
    expectOk(result);
    const [entry] = (JSON.parse(result.stdout) as { rubrics: { counts: Record<string, number>; flips: { judged_to_unjudged: { new_reason: string }[] } }[] })
      .rubrics;
    expect(entry!.counts).toEqual({ approved_to_rejected: 0, rejected_to_approved: 0, judged_to_unjudged: 4 });
    expect(entry!.flips.judged_to_unjudged[0]!.new_reason).toBe('the judges scored criteria worth 0.55 of the weight, below the minimum coverage 0.6');
  });

  it('says plainly when no proposal was judged under the rubric', async () => {
    const t = await testEngine();
    await t.engine.propose(proposalInput(), { stage: 'propose', actor: 'cli' });
    const result = await rescore(t.storeDir, '--rubric', 'rubrics/lesson-promotion.yaml');
    expectOk(result);
    expect(result.stdout).toBe('rubrics/lesson-promotion.yaml (lesson-promotion): no recorded panels for rubric lesson-promotion\n');
  });

  it('refuses a rubric whose weights no longer sum to 1.00, with its position, reading no store', async () => {
    const storeDir = path.join((await testEngine()).storeDir, 'never-made');
    const result = await rescore(storeDir, '--rubric', `${FIXTURES}/reweighted.yaml`, '--rubric', `${FIXTURES}/bad-weights.yaml`);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n')[0]).toBe(`${FIXTURES}/bad-weights.yaml:4:1: criterion weights sum to 1.01, expected 1.00 (0.45 + 0.35 + 0.21)`);
    expect(result.stderr).toContain('error: invalid rubric (1 error)');
    expect(snapshotTree(path.dirname(storeDir))).toEqual({});
  });

  it('refuses a rubric file that is a FIFO, a device or too large, naming it — never waiting on it or reading it whole', async () => {
    const storeDir = (await testEngine()).storeDir;
    const dir = tempDir('pipeline-rubrics-');
    const fifo = path.join(dir, 'rubric.fifo');
    execFileSync('mkfifo', [fifo]);
    const large = path.join(dir, 'large.yaml');
    writeFileSync(large, `# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    for (const [file, why] of [
      [fifo, 'it is a FIFO, not a regular file'],
      ['/dev/zero', 'it is a device, not a regular file'],
      [large, 'it is larger than 1 MiB'],
    ] as const) {
      const result = await rescore(storeDir, '--rubric', file);
      expect([result.code, result.stderr]).toEqual([1, expect.stringContaining(why)]);
      expect(result.stderr).toContain('error: invalid rubric (1 error)');
    }
  });

  it('places a byte that is not UTF-8 at its line and column in the rubric file', async () => {
    const storeDir = (await testEngine()).storeDir;
    const file = path.join(tempDir('pipeline-rubrics-'), 'latin1.yaml');
    writeFileSync(file, Buffer.from('id: lesson-promotion\ndescription: caf\u00e9\n', 'latin1'));
    const result = await rescore(storeDir, '--rubric', file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${path.normalize(file)}:2:17: cannot read ${path.normalize(file)}: it is not UTF-8 text (byte 0xE9 at line 2, column 17)`);
  });

  it('is a usage error without --rubric', async () => {
    const result = await rescore((await testEngine()).storeDir);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: rescore: --rubric FILE is required\nusage: pipeline rescore --rubric FILE [--rubric FILE …] [--json]\n');
  });

  it('notes a rubric id the pipeline does not know, since panels are matched by id', async () => {
    const s = await scenario();
    const renamed = path.join(path.dirname(s.t.storeDir), 'renamed.yaml');
    writeFileSync(
      renamed,
      'id: lesson-promotion-v2\ncriteria: [{ name: grounding, weight: 1 }]\nscore_threshold: 0.5\njudge_types: [standard, adversarial]\ngate_policy: majority\n',
    );
    const result = await rescore(s.t.storeDir, '--rubric', renamed);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('rubric id "lesson-promotion-v2" is not one of this pipeline\'s rubrics');
    expect(result.stdout).toContain(
      'no recorded panels for rubric lesson-promotion-v2 (4 panels were recorded under other rubric ids); 1 no-jury proposal out of scope',
    );
  });
});
