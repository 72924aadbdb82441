/**
 * SPEC §4: only files named <ULID>.json are proposals, and one that is empty, truncated or not a
 * JSON object is reported (one line, by id) and skipped — never counted, never overwritten or
 * deleted, never aborting a listing or a run. Random garbage from fast-check goes through the
 * store's own queries; one file of every kind goes through the real binary's status, list, show
 * and run.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ulidGenerator } from '../../engine/util/ids.js';
import { BIN, fileConfigCache, ROOT, SECRET_FILE } from '../helpers.js';
import { confirmedStore } from '../torture/harness.js';

const seed = Number(process.env['FUZZ_SEED'] ?? 20261130);
const newId = ulidGenerator();

function isJsonObject(bytes: Buffer): boolean {
  try {
    const value = JSON.parse(bytes.toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Garbage of every kind: never a JSON object, so never a proposal. */
const garbage: fc.Arbitrary<Buffer> = fc
  .oneof(
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
    fc.string({ maxLength: 200 }).map((text) => Buffer.from(text)),
    fc
      .constantFrom(
        '',
        ' ',
        '\n',
        '\uFEFF{}',
        'null',
        'true',
        '0',
        '"pending"',
        '[]',
        '[{"status":"pending"}]',
        '{"status": "pending"',
        '{"status": "confirmed",}',
      )
      .map((text) => Buffer.from(text)),
    fc.array(fc.jsonValue(), { maxLength: 5 }).map((value) => Buffer.from(JSON.stringify(value))),
    fc.double({ min: 0.05, max: 0.95, noNaN: true }).map((share) => {
      const whole = `${JSON.stringify({ id: 'x', status: 'confirmed', candidate: { claim: 'a truncated proposal' } }, null, 2)}\n`;
      return Buffer.from(whole.slice(0, Math.floor(whole.length * share)));
    }),
    fc.constantFrom(2_000_000, 200_000).map((size) => Buffer.from(`[${'"x",'.repeat(size / 4)}"x"]`)),
    fc.integer({ min: 1000, max: 100_000 }).map((depth) => Buffer.from('['.repeat(depth))),
  )
  .filter((bytes) => !isJsonObject(bytes));

function writeGarbage(storeDir: string, files: Buffer[]): Map<string, { bytes: Buffer; mtimeMs: number }> {
  const written = new Map<string, { bytes: Buffer; mtimeMs: number }>();
  for (const bytes of files) {
    const id = newId();
    const file = path.join(storeDir, 'proposals', `${id}.json`);
    writeFileSync(file, bytes);
    written.set(id, { bytes, mtimeMs: statSync(file).mtimeMs });
  }
  return written;
}

function expectUntouched(storeDir: string, written: Map<string, { bytes: Buffer; mtimeMs: number }>): void {
  for (const [id, { bytes, mtimeMs }] of written) {
    const file = path.join(storeDir, 'proposals', `${id}.json`);
    expect(readFileSync(file).equals(bytes), id).toBe(true);
    expect(statSync(file).mtimeMs, id).toBe(mtimeMs);
  }
}

describe('garbage proposal files', () => {
  it('are skipped and reported by the store queries, never counted and never modified', async () => {
    const t = await confirmedStore(4);
    const states = t.pipeline.lifecycle.states;
    await fc.assert(
      fc.asyncProperty(fc.array(garbage, { minLength: 1, maxLength: 4 }), async (files) => {
        const written = writeGarbage(t.storeDir, files);
        const { counts, malformed } = await t.store.counts(states);
        expect(Object.values(counts).reduce((sum, count) => sum + count, 0)).toBe(t.ids.length);
        for (const id of written.keys()) expect(malformed).toContain(id);
        const found: string[] = [];
        const bad: string[] = [];
        for await (const listed of t.store.list({ status: 'confirmed' }))
          (listed.kind === 'found' ? found : bad).push(listed.kind === 'found' ? listed.stored.id : listed.id);
        expect(found.sort()).toEqual([...t.ids].sort());
        for (const id of written.keys()) expect(bad).toContain(id);
        for (const id of written.keys()) expect((await t.engine.read(id)).ok).toBe(false);
        expectUntouched(t.storeDir, written);
      }),
      { seed, numRuns: Number(process.env['FUZZ_RUNS'] ?? 40) },
    );
  }, 120_000);

  it('never abort status, list, show or a run of the real binary, each reported once by id and left as they are', async () => {
    const t = await confirmedStore(6);
    const kinds = [
      '',
      '   \n',
      '{"status": "confirmed", "id": "trunc',
      '[1, 2, 3]',
      'null',
      '"confirmed"',
      '\u0000\u00ff\u00fe garbage',
      '\uFEFF{"status":"confirmed"}',
      `[${'"x",'.repeat(500_000)}"x"]`,
      '['.repeat(100_000),
    ];
    const written = writeGarbage(
      t.storeDir,
      kinds.map((text) => Buffer.from(text)),
    );
    const env = {
      ...process.env,
      PIPELINE_STORE: t.storeDir,
      PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE,
      PIPELINE_CONFIG_CACHE: fileConfigCache(),
      NO_COLOR: '1',
    };
    const pipeline = (...args: string[]) =>
      spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
    const reportsEach = (stderr: string) => {
      expect(stderr).not.toMatch(/internal error|^\s+at .+:\d+:\d+\)?$/m);
      for (const id of written.keys())
        expect(
          stderr.split('\n').filter((line) => line.includes(id)),
          `${id} in\n${stderr}`,
        ).toHaveLength(1);
    };

    const status = pipeline('status', '--json');
    expect(status.status).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({ pending: 0, confirmed: t.ids.length, passed: 0, approved: 0, rejected: 0, archived: 0 });
    reportsEach(status.stderr);
    for (const args of [['list'], ['list', '--state', 'confirmed', '--json']]) {
      const list = pipeline(...args);
      expect(list.status, args.join(' ')).toBe(0);
      reportsEach(list.stderr);
    }
    expect(
      JSON.parse(pipeline('list', '--state', 'confirmed', '--json').stdout)
        .map((item: { id: string }) => item.id)
        .sort(),
    ).toEqual([...t.ids].sort());
    const [someId] = written.keys();
    const show = pipeline('show', someId!);
    expect(show.status).toBe(1);
    expect(show.stderr).toContain(someId);

    const judged = pipeline('run', 'judge', '--yes', '--json');
    expect(judged.status, judged.stderr).toBe(0);
    expect(JSON.parse(judged.stdout).refused).toEqual([]);
    expect(judged.stderr).not.toMatch(/internal error/);
    const after = pipeline('status', '--json');
    const counts = JSON.parse(after.stdout) as Record<string, number>;
    expect(counts['approved']! + counts['rejected']!).toBe(t.ids.length);
    expectUntouched(t.storeDir, written);
  }, 120_000);
});
