/**
 * A cold start with no configuration cache reads pipeline.yaml to find the files it names, then
 * validates it: one parse serves both (the second cost ~12 ms of a ~440 ms start).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildPipeline } from '../../engine/config/build.js';
import { configValidators } from '../../engine/config/config-schemas.js';
import { readConfigTexts, takeParsed } from '../../engine/config/read.js';
import { sourceParses } from '../../engine/config/source.js';
import { copyPipeline, ROOT } from '../helpers.js';

describe('pipeline.yaml on a build with every check', () => {
  it('is parsed once, for finding the files it names and for checking it', async () => {
    const validators = await configValidators();
    const before = sourceParses.count;
    const texts = readConfigTexts(ROOT, {});
    const { pipeline, config, issues } = buildPipeline(ROOT, texts, {}, validators, { full: true });
    expect(issues.filter((issue) => issue.severity === 'error')).toEqual([]);
    expect(pipeline).toBeDefined();
    // Every file once: pipeline.yaml, the machine, the stages and the rubrics; and each JSON Schema,
    // read as YAML too for the positions of its keys (a key given twice, a keyword that is wrong).
    const yamlFiles = config!.files.filter((file) => file.endsWith('.yaml'));
    const schemaFiles = config!.files.filter((file) => file.endsWith('.json'));
    expect(yamlFiles).toContain('pipeline.yaml');
    expect(sourceParses.count - before).toBe(yamlFiles.length + schemaFiles.length);
  });

  it('hands that parse over once, and only for the same text', () => {
    const texts = readConfigTexts(ROOT, {});
    const text = texts.get('pipeline.yaml');
    expect(takeParsed(texts, 'pipeline.yaml', `${text}# edited\n`)).toBeUndefined();
    expect(takeParsed(texts, 'pipeline.yaml', text)?.source.text).toBe(text);
    expect(takeParsed(texts, 'pipeline.yaml', text)).toBeUndefined();
  });

  it('still reports a syntax error in it where it is, and nothing else', async () => {
    const dir = copyPipeline();
    const file = path.join(dir, 'pipeline.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^name: .*$/m, 'name: [unclosed'));
    const { issues } = buildPipeline(dir, readConfigTexts(dir, {}), {}, await configValidators(), { full: true });
    expect(issues.length).toBeGreaterThan(0);
    expect(issues.every((issue) => issue.file === 'pipeline.yaml' && typeof issue.line === 'number')).toBe(true);
  });
});
