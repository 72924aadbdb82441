/**
 * One process, many commands (`main` called again, `viz --serve`): the pipeline opened from a
 * directory is reused only while every input is what it was — each file the configuration was
 * read from, each variable those files interpolate, each key variable's being set.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipeline } from '../../engine/config/load.js';
import { copyPipeline } from '../helpers.js';

function edit(dir: string, file: string, from: string, to: string): void {
  const full = path.join(dir, file);
  const text = readFileSync(full, 'utf8');
  if (!text.includes(from)) throw new Error(`${file}: nothing to replace`);
  writeFileSync(full, text.replace(from, to));
}

const env = { OLLAMA_MODEL: 'llama3.1' };

describe('the pipeline opened in this process', () => {
  it('is reused while nothing changed', async () => {
    const dir = copyPipeline();
    const first = await loadPipeline(dir, env);
    expect(await loadPipeline(dir, { ...env })).toBe(first);
  });

  it('is opened again after an edit to any file it was read from, and sees the edit', async () => {
    const dir = copyPipeline();
    const first = await loadPipeline(dir, env);
    edit(dir, 'rubrics/lesson-promotion.yaml', '{ name: generality, weight: 0.20, min_pass: 0.6 }', '{ name: generality, weight: 0.20, min_pass: 0.65 }');
    const second = await loadPipeline(dir, env);
    expect(second).not.toBe(first);
    const floors = (pipeline: typeof first) => [...pipeline.rubrics.values()].flatMap((rubric) => rubric.criteria.map((criterion) => criterion.min_pass));
    expect(floors(second)).toContain(0.65);
    expect(floors(first)).not.toContain(0.65);
  });

  it('is opened again when a variable the files interpolate changes', async () => {
    const dir = copyPipeline();
    const first = await loadPipeline(dir, env);
    const second = await loadPipeline(dir, { OLLAMA_MODEL: 'qwen3' });
    expect(second).not.toBe(first);
    expect(second.def.providers?.['ollama']).toMatchObject({ model: 'qwen3' });
  });

  it('is not reused once an edit makes the configuration invalid: the error is reported', async () => {
    const dir = copyPipeline();
    await loadPipeline(dir, env);
    edit(dir, 'pipeline.yaml', 'concurrency: 8', 'concurrency: eight');
    await expect(loadPipeline(dir, env)).rejects.toThrow(/invalid configuration/);
  });
});
