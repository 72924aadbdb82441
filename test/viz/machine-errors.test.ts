/**
 * The visualizer draws flat machines only, because the engine runs flat machines only: a proposal
 * has exactly one status. Nested (compound) and parallel states are refused at load with a
 * positioned error, and `pipeline viz` refuses to draw such a machine.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipeline } from '../../engine/config/load.js';
import { formatIssue, PipelineError } from '../../engine/errors.js';
import { copyPipeline, tempDir } from '../helpers.js';
import { runInProcess } from './fixtures.js';

/** A copy of the shipped pipeline whose `approved` state has child states and `rejected` is parallel. */
function nestedPipeline(): string {
  const dir = copyPipeline();
  const file = path.join(dir, 'machines', 'lesson.yaml');
  const text = readFileSync(file, 'utf8')
    .replace('  approved:\n', '  approved:\n    states:\n      live: {}\n      retired: {}\n')
    .replace('  rejected:\n', '  rejected:\n    type: parallel\n');
  writeFileSync(file, text);
  return dir;
}

async function loadIssues(dir: string): Promise<string[]> {
  try {
    await loadPipeline(dir, { ...process.env, PIPELINE_CONFIG_CACHE: 'off' }, { useCache: false });
  } catch (error) {
    if (error instanceof PipelineError) return error.issues.map(formatIssue);
    throw error;
  }
  throw new Error('the pipeline loaded');
}

describe('machines the visualizer cannot draw', () => {
  it('refuses nested and parallel states at load, naming the file, line and column', async () => {
    const dir = nestedPipeline();
    const lines = readFileSync(path.join(dir, 'machines', 'lesson.yaml'), 'utf8').split('\n');
    const statesLine = lines.findIndex((line) => line === '    states:') + 1;
    const typeLine = lines.findIndex((line) => line === '    type: parallel') + 1;
    expect(await loadIssues(dir)).toEqual([
      `machines/lesson.yaml:${statesLine}:5: states: nested states are not supported: a proposal has exactly one status`,
      `machines/lesson.yaml:${typeLine}:11: unknown type "parallel" (expected atomic or final)`,
    ]);
  });

  it('makes pipeline viz exit 1 with the same errors and print nothing', async () => {
    const dir = nestedPipeline();
    const result = await runInProcess(['--dir', dir, 'viz', '--store', tempDir()]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('nested states are not supported: a proposal has exactly one status');
    expect(result.stderr).toContain('unknown type "parallel" (expected atomic or final)');
  });
});
