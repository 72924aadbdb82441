/** A large proposals directory is stat'ed by two threads: the worker's half must read as the caller's. */
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileStore } from '../../engine/store/file-store.js';
import { setParallelStatFrom, statFiles, statsFromWorker } from '../../engine/store/parallel-stat.js';
import { tempDir } from '../helpers.js';
import { LAYOUT } from './contract.js';

const ids = Array.from({ length: 8 }, (_, i) => `01ARZ3NDEKTSV4RRFFQ69G5FA${i}`);
const doc = (id: string, status: string) => `${JSON.stringify({ id, artifact_id: id, created_at: '2026-11-01T00:00:00Z', status }, null, 2)}\n`;

afterEach(() => setParallelStatFrom(40_000));

describe('stat by two threads', () => {
  it('reads every kind of entry in the worker’s half as lstat does: file, link, directory, missing', async () => {
    const dir = tempDir('pipeline-stat-');
    writeFileSync(path.join(dir, `${ids[0]}.json`), 'a');
    writeFileSync(path.join(dir, `${ids[4]}.json`), 'some bytes');
    symlinkSync(path.join(dir, `${ids[4]}.json`), path.join(dir, `${ids[5]}.json`));
    mkdirSync(path.join(dir, `${ids[6]}.json`));
    writeFileSync(path.join(dir, `${ids[7]}.json`), '');
    setParallelStatFrom(2);
    const before = statsFromWorker.count;
    const stats = statFiles(`${dir}/`, ids, '.json');
    const got: unknown[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (i === stats.from) await stats.ready();
      got.push(stats.at(i));
    }
    expect(statsFromWorker.count - before).toBe(4);
    const file = (id: string) => {
      const real = lstatSync(path.join(dir, `${id}.json`));
      return { mtimeMs: real.mtimeMs, size: real.size, ino: real.ino, ctimeMs: real.ctimeMs };
    };
    expect(got).toEqual([file(ids[0]!), undefined, undefined, undefined, file(ids[4]!), null, null, file(ids[7]!)]);
  });

  it('waits for a worker that dies at its start without blocking, then stats its half itself', async () => {
    const dir = tempDir('pipeline-stat-');
    for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), id);
    // As with a preload that fails in worker threads: the worker is gone before its script runs.
    // Waiting for it by blocking the thread would hang for 30 s (and time this test out).
    setParallelStatFrom(2, 'throw new Error("dies at its start")');
    const before = statsFromWorker.count;
    const stats = statFiles(`${dir}/`, ids, '.json');
    expect(stats.from).toBe(4);
    for (let i = 0; i < ids.length; i++) {
      if (i === stats.from) await stats.ready();
      expect(stats.at(i)).toEqual(expect.objectContaining({ size: 26 }));
    }
    expect(statsFromWorker.count).toBe(before);
  }, 10_000);

  it('stops the worker when the scan is closed early', async () => {
    const dir = tempDir('pipeline-stat-');
    for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), id);
    setParallelStatFrom(2, 'setInterval(() => {}, 1000)'); // a worker that would never finish
    const stats = statFiles(`${dir}/`, ids, '.json');
    stats.close();
    await stats.ready(); // settled by the worker's exit, not after the 30 s it would be given
    expect(stats.at(7)).toEqual(expect.objectContaining({ size: 26 }));
  }, 10_000);

  it('keeps a store’s status index exact, and sees a hand edit in the worker’s half', async () => {
    const dir = tempDir('pipeline-store-');
    mkdirSync(path.join(dir, 'proposals'), { recursive: true });
    for (const id of ids) writeFileSync(path.join(dir, 'proposals', `${id}.json`), doc(id, 'pending'));
    setParallelStatFrom(2);
    const store = new FileStore({ dir, ...LAYOUT });
    expect((await store.counts(['pending', 'confirmed'])).counts).toEqual({ pending: 8, confirmed: 0 });
    // The index records each file's (mtime, size, inode) as the worker saw them: they are the real ones.
    const lines = readFileSync(path.join(dir, '.index', 'proposals.tsv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1);
    expect(lines).toHaveLength(8);
    for (const line of lines) {
      const [id, , , mtimeMs, size, ino] = line.split('\t');
      const real = lstatSync(path.join(dir, 'proposals', `${id}.json`));
      expect([mtimeMs, size, ino]).toEqual([String(real.mtimeMs), String(real.size), String(real.ino)]);
    }
    const edited = path.join(dir, 'proposals', `${ids[6]}.json`);
    writeFileSync(edited, doc(ids[6]!, 'confirmed'));
    const before = statsFromWorker.count;
    expect((await store.counts(['pending', 'confirmed'])).counts).toEqual({ pending: 7, confirmed: 1 });
    expect(statsFromWorker.count - before).toBe(4);
  });
});
