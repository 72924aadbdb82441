/**
 * SPEC §5.8 and §2: the `pool:` section of pipeline.yaml is validated like every other piece of
 * configuration — schema errors and cross-file rules, all at once, at file:line:col — and the
 * shipped numbers are the ones the spec gives.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configValidators } from '../../engine/config/config-schemas.js';
import { buildPipeline } from '../../engine/config/build.js';
import { readConfigTexts } from '../../engine/config/read.js';
import { formatIssue } from '../../engine/errors.js';
import { poolOf } from '../../engine/pool/pool.js';
import { copyPipeline, ROOT, shippedPipeline } from '../helpers.js';

async function withEdit(edit: (yaml: string) => string, machineEdit?: (yaml: string) => string): Promise<string[]> {
  const dir = copyPipeline();
  const file = path.join(dir, 'pipeline.yaml');
  const after = edit(readFileSync(file, 'utf8'));
  if (after === readFileSync(file, 'utf8')) throw new Error('the edit changed nothing');
  writeFileSync(file, after);
  if (machineEdit) writeFileSync(path.join(dir, 'machines/lesson.yaml'), machineEdit(readFileSync(path.join(dir, 'machines/lesson.yaml'), 'utf8')));
  const { issues } = buildPipeline(dir, readConfigTexts(dir, {}), {}, await configValidators(), { full: true });
  return issues.map(formatIssue);
}

const lineOf = (needle: string) =>
  readFileSync(path.join(ROOT, 'pipeline.yaml'), 'utf8')
    .split('\n')
    .findIndex((line) => line.includes(needle)) + 1;

describe('the shipped pool', () => {
  it('has the numbers of §5.8: half-life 180 days, K 3 capped at 50, low signal under 3, prune at ≥ 5 and < 0.3, 3 per run', async () => {
    const pool = poolOf(await shippedPipeline())!;
    expect(pool.ranking).toEqual({ halfLifeDays: 180, k: 3, maxK: 50, minOutcomes: 3, hitWeight: { untested: 1, base: 0.5, floor: 0.1 } });
    expect(pool.prune).toEqual({ minOutcomes: 5, maxHitRate: 0.3, maxArchive: 3, receipts: 'prune-receipts' });
    expect(pool.state).toBe('approved');
    expect(pool.archivedState).toBe('archived');
  });
});

describe('a pool: section that is wrong', () => {
  it('reports schema errors where they are', async () => {
    const issues = await withEdit((yaml) => yaml.replace('half_life_days: 180', 'half_life_days: 0').replace('max_hit_rate: 0.3', 'max_hit_rate: 1.5'));
    expect(issues).toEqual([
      expect.stringMatching(new RegExp(`^pipeline.yaml:${lineOf('half_life_days: 180')}:\\d+: .*0`)),
      expect.stringMatching(new RegExp(`^pipeline.yaml:${lineOf('max_hit_rate: 0.3')}:\\d+: .*1`)),
    ]);
  });

  it('reports an unknown key, and a field that is not a dotted path', async () => {
    const issues = await withEdit((yaml) => yaml.replace('    k: 3 ', '    kk: 3 ').replace('hits: hit_count', 'hits: "hit count"'));
    expect(issues.join('\n')).toMatch(new RegExp(`pipeline.yaml:${lineOf('    k: 3 ')}:5: unknown key "kk" in ranking\n  hint: did you mean "k"?`));
    const dotted = 'hits "hit count": a field is a dotted path such as candidate.applies_to.stack';
    expect(issues.join('\n')).toMatch(new RegExp(`pipeline.yaml:${lineOf('hits: hit_count')}:11: ${dotted}`));
  });

  it('reports a state or events the machine does not have, with a hint', async () => {
    const issues = await withEdit((yaml) => yaml.replace('state: approved', 'state: aproved'));
    expect(issues).toEqual([`pipeline.yaml:${lineOf('state: approved')}:10: unknown state "aproved"\n  hint: did you mean "approved"?`]);
    const events = await withEdit((yaml) => yaml.replace('outcome: record_outcome', 'outcome: record_outcom').replace('restore: restore', 'restore: approve'));
    const at = `pipeline.yaml:${lineOf('outcome: record_outcome')}`;
    expect(events).toEqual([
      expect.stringMatching(new RegExp(`^${at}:\\d+: state "approved" has no "record_outcom" transition that stays in "approved"\\n  hint: did you mean`)),
      expect.stringMatching(new RegExp(`^${at}:\\d+: state "archived" has no "approve" transition back to "approved"`)),
    ]);
  });

  it('reports an archive event that does not leave the state, K above its cap and a show key that shadows a fixed one', async () => {
    const issues = await withEdit((yaml) =>
      yaml
        .replace('archive: archive', 'archive: record_outcome')
        .replace('    k: 3 ', '    k: 60 ')
        .replace('claim: candidate.claim', 'score: candidate.claim'),
    );
    expect(issues).toEqual([
      expect.stringMatching(/state "approved" has no "record_outcome" transition to another state/),
      expect.stringMatching(new RegExp(`^pipeline.yaml:${lineOf('    k: 3 ')}:\\d+: k is 60, more than max_k \\(50\\)`)),
      expect.stringMatching(new RegExp(`^pipeline.yaml:${lineOf('claim: candidate.claim')}:\\d+: "score" is a key every pool top row has already`)),
    ]);
  });

  it('makes "pool" a reserved command name', async () => {
    const dir = copyPipeline();
    const review = path.join(dir, 'stages/review.yaml');
    writeFileSync(review, readFileSync(review, 'utf8').replace('  defer:\n', '  pool:\n'));
    const { issues } = buildPipeline(dir, readConfigTexts(dir, {}), {}, await configValidators(), { full: true });
    expect(issues.map(formatIssue).join('\n')).toMatch(/review command "pool" clashes with the built-in command/);
  });
});
