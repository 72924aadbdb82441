/**
 * SPEC §5.5, §6, §12: source records are untrusted. The transform reads only regular files of a
 * bounded size and never blocks (a FIFO, a directory, a symbolic link out of the source directory
 * are reported by name and skipped), never quotes a bad record's bytes, and declines a record or a
 * candidate whose text field is over the declared cap instead of scanning it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { TransformStageDef } from '../../engine/config/types.js';
import type { Provider, ProviderRequest, ProviderResult } from '../../engine/providers/types.js';
import type { RunOptions } from '../../engine/runner/driver.js';
import { runStage } from '../../engine/stages/index.js';
import { DEFAULT_MAX_FIELD_BYTES, oversizeField } from '../../engine/util/text-size.js';
import { MAX_PRINT_DEPTH } from '../../engine/util/nesting.js';
import { tempDir, testEngine, type TestEngine, quietRun } from '../helpers.js';

let t: TestEngine;
let stage: TransformStageDef;
let source: string;
beforeEach(async () => {
  t = await testEngine();
  stage = t.pipeline.stages.find((candidate) => candidate.kind === 'transform') as TransformStageDef;
  source = tempDir('pipeline-source-');
});

let counter = 0;
function artifact(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  return {
    id: `01JE${String(counter).padStart(22, '0')}`,
    kind: 'decision',
    project_key: 'a1b2c3d4e5f6',
    session_id: `session-${counter}`,
    created_at: '2026-10-10T10:00:00Z',
    summary: 'Vitest 4.1 needs Node 20 or later to run its workers',
    detail: 'Running the suite on Node 18 crashed the workers at start.\nResolution: moved CI to Node 20 and pinned engines.\nVersions: vitest >=4 <5',
    files: ['package.json'],
    ...overrides,
  };
}

const candidate = (extra: Record<string, unknown> = {}) => ({
  claim: 'Vitest 4 needs Node 20 or later to run its worker threads',
  rationale: 'Its workers use APIs that Node 18 does not have, so the run crashes at start.',
  evidence: { resolution: 'Moved CI to Node 20.' },
  applies_to: { stack: ['vitest'], scope: { kind: 'versioned', versions: { vitest: '>=4 <5' } }, file_patterns: ['package.json'], task_kinds: ['ci'] },
  ...extra,
});

function fake(answer: (request: ProviderRequest) => ProviderResult): Provider & { calls: ProviderRequest[] } {
  const calls: ProviderRequest[] = [];
  return {
    name: 'fake',
    kind: 'command',
    paid: false,
    model: 'm',
    deterministic: false,
    calls,
    async call(request) {
      calls.push(request);
      return answer(request);
    },
  };
}

const answering = (value: unknown) => fake(() => ({ ok: true, text: JSON.stringify(value), usage: { tokens_in: null, tokens_out: null } }));

async function run(provider: Provider | undefined, extra: Partial<RunOptions> = {}) {
  const notes: string[] = [];
  const summary = await runStage(
    t.engine,
    stage,
    quietRun({
      source,
      note: (line) => notes.push(line),
      ...(provider ? { providers: { get: () => provider } } : {}),
      ...extra,
    }),
  );
  return { summary, notes };
}

const declined = () => {
  const file = path.join(t.storeDir, 'declined.jsonl');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
    : [];
};

describe('entries that are not regular files inside the source directory', () => {
  it('reports a FIFO, a directory and a symbolic link out of the directory by name, skips them, and never blocks', async () => {
    execFileSync('mkfifo', [path.join(source, 'fifo.json')]);
    // Should the FIFO ever be read, a writer turns up after a while, so the test fails instead of hanging.
    const writer = spawn('sh', ['-c', 'sleep 3; printf "not json" > fifo.json'], { cwd: source, stdio: 'ignore', detached: true });
    onTestFinished(() => {
      try {
        process.kill(-writer.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    });
    mkdirSync(path.join(source, 'x.json'));
    const outside = path.join(tempDir('pipeline-outside-'), 'secret.json');
    writeFileSync(outside, JSON.stringify(artifact()));
    symlinkSync(outside, path.join(source, 'outside.json'));
    // A link that stays inside the directory is read like the file it points to.
    mkdirSync(path.join(source, 'records'));
    const inside = artifact();
    writeFileSync(path.join(source, 'records', 'inside.record'), JSON.stringify(inside));
    symlinkSync(path.join('records', 'inside.record'), path.join(source, 'inside.json'));
    const plain = artifact();
    writeFileSync(path.join(source, 'plain.json'), JSON.stringify(plain));
    const provider = answering(candidate());
    const { summary, notes } = await run(provider);
    expect(notes).toEqual([
      'transform: fifo.json: is a FIFO, not a regular file — skipped',
      'transform: outside.json: is a symbolic link to a file outside the source directory — skipped',
      'transform: x.json: is a directory, not a regular file — skipped',
    ]);
    expect(summary.counts['proposed']).toBe(2);
    expect(provider.calls.map((call) => (call.input['record'] as { id: string }).id).sort()).toEqual([inside['id'], plain['id']].sort());
  });

  it('says what is wrong with a bad record without quoting any of its bytes', async () => {
    writeFileSync(path.join(source, 'garbage.json'), 'sk-ant-api03-LEAKEDLEAKEDLEAKED {"id": 1');
    writeFileSync(path.join(source, 'empty.json'), '');
    writeFileSync(path.join(source, 'control.json'), '\u001b]0;owned\u0007');
    const { notes } = await run(answering(candidate()));
    expect(notes).toHaveLength(3);
    for (const note of notes) {
      expect(note).toMatch(/^transform: (garbage|empty|control)\.json: not valid JSON( \((at character \d+|the file is empty)\))? — skipped$/);
      expect(note).not.toMatch(/LEAKED|sk-ant|owned|\u001b/);
    }
  });

  it('reports a record file over max_record_bytes without reading it', async () => {
    writeFileSync(path.join(source, 'huge.json'), JSON.stringify(artifact({ summary: `Vitest 4.1 ${'x'.repeat(1024 * 1024)}` })));
    const provider = answering(candidate());
    const { notes } = await run(provider);
    expect(notes).toEqual([expect.stringMatching(/^transform: huge\.json: is \d+ bytes, over the 1048576-byte record cap \(max_record_bytes\) — skipped$/)]);
    expect(provider.calls).toHaveLength(0);
  });
});

describe('values nested deeper than the call stack goes', () => {
  const deep = (levels: number, inner = '') => JSON.parse(`${'['.repeat(levels)}${inner}${']'.repeat(levels)}`);

  it('reports and skips a record nested 100,000 levels deep, and proposes the others', async () => {
    const record = artifact();
    writeFileSync(path.join(source, 'deep.json'), `${JSON.stringify(record).slice(0, -1)},"extra":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const plain = artifact();
    writeFileSync(path.join(source, 'plain.json'), JSON.stringify(plain));
    const provider = answering(candidate());
    const { summary, notes } = await run(provider);
    expect(notes).toEqual([`transform: deep.json: nests more than ${MAX_PRINT_DEPTH} levels deep — skipped`]);
    expect(summary.counts['proposed']).toBe(1);
    expect(provider.calls.map((call) => (call.input['record'] as { id: string }).id)).toEqual([plain['id']]);
    expect(declined()).toEqual([]);
  });

  it('declines a candidate nested 100,000 levels deep as schema_invalid', async () => {
    const record = artifact();
    writeFileSync(path.join(source, 'a.json'), JSON.stringify(record));
    const text = `${JSON.stringify(candidate()).slice(0, -1)},"extra":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const { summary } = await run(fake(() => ({ ok: true, text, usage: { tokens_in: null, tokens_out: null } })));
    expect(summary.counts['declined']).toBe(1);
    expect(declined()).toEqual([
      {
        artifact_id: record['id'],
        reason: 'schema_invalid',
        detail: `the candidate nests more than ${MAX_PRINT_DEPTH} levels deep`,
        declined_at: expect.any(String),
      },
    ]);
  });

  it('finds an oversize text field at any depth without recursing', () => {
    expect(oversizeField(deep(100_000), 10)).toBeUndefined();
    expect(oversizeField(deep(100_000, '"too long"'), 4)).toEqual({ path: Array(100_000).fill('0').join('.'), bytes: 8 });
    expect(oversizeField({ a: ['short', { b: 'long enough' }], c: 'also long' }, 5)).toEqual({ path: 'a.1.b', bytes: 11 });
    expect(oversizeField('long enough', 5)).toEqual({ path: '(the value)', bytes: 11 });
  });
});

describe('the text field cap (max_field_bytes, shipped 64 KiB)', () => {
  it('is declared in the shipped transform stage', () => {
    expect(stage.max_field_bytes).toBe(DEFAULT_MAX_FIELD_BYTES);
    expect(DEFAULT_MAX_FIELD_BYTES).toBe(65536);
  });

  it('declines a record with a larger text field as schema_invalid, before the pre-gate or any provider', async () => {
    const record = artifact({ detail: `Resolution: done.\nVersions: vitest >=4 <5\n${'é'.repeat(40_000)}` });
    writeFileSync(path.join(source, 'big.json'), JSON.stringify(record));
    const provider = answering(candidate());
    const { summary } = await run(provider);
    expect(summary.counts['declined']).toBe(1);
    expect(provider.calls).toHaveLength(0);
    expect(declined()).toEqual([
      {
        artifact_id: record['id'],
        reason: 'schema_invalid',
        detail: expect.stringMatching(/^the record's detail is 80\d\d\d bytes, over the 65536-byte cap per text field \(max_field_bytes\)$/),
        declined_at: expect.any(String),
      },
    ]);
  });

  it('declines a candidate with a larger text field, and takes one of exactly the cap', async () => {
    const [over, exact] = [artifact(), artifact()];
    writeFileSync(path.join(source, 'over.json'), JSON.stringify(over));
    writeFileSync(path.join(source, 'exact.json'), JSON.stringify(exact));
    const rationale = (bytes: number) => `Its workers need Node 20. ${'y'.repeat(bytes - 26)}`;
    const provider = fake((request) => ({
      ok: true,
      text: JSON.stringify(candidate({ rationale: rationale((request.input['record'] as { id: string }).id === over['id'] ? 65537 : 65536) })),
      usage: { tokens_in: null, tokens_out: null },
    }));
    const { summary } = await run(provider);
    expect(summary.counts).toMatchObject({ proposed: 1, declined: 1 });
    expect(declined()).toEqual([
      {
        artifact_id: over['id'],
        reason: 'schema_invalid',
        detail: "the candidate's rationale is 65537 bytes, over the 65536-byte cap per text field (max_field_bytes)",
        declined_at: expect.any(String),
      },
    ]);
  });
});
