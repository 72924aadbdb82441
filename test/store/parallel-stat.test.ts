/** A large proposals directory is stat'ed by two threads: what the worker reads must read as the caller's. */
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileStore } from '../../engine/store/file-store.js';
import { type FileStat, type FileStats, PackedIds, setParallelStatFrom, statFiles, statsFromWorker } from '../../engine/store/parallel-stat.js';
import { tempDir } from '../helpers.js';
import { LAYOUT } from './contract.js';

const ids = Array.from({ length: 8 }, (_, i) => `01ARZ3NDEKTSV4RRFFQ69G5FA${i}`);
const doc = (id: string, status: string) => `${JSON.stringify({ id, artifact_id: id, created_at: '2026-11-01T00:00:00Z', status }, null, 2)}\n`;

afterEach(() => setParallelStatFrom(40_000));

/** Every stat, read as a scan reads them: claim each chunk, wait when told to, then read. */
async function readAll(stats: FileStats, count: number): Promise<FileStat[]> {
  const got: FileStat[] = [];
  for (let i = 0; i < count; i++) {
    const claimed = stats.claim(i);
    if (claimed) await claimed;
    got.push(stats.at(i));
  }
  stats.close();
  return got;
}

describe('stat by two threads', () => {
  it('reads every kind of entry the worker stats as lstat does: file, link, directory, missing', async () => {
    const dir = tempDir('pipeline-stat-');
    writeFileSync(path.join(dir, `${ids[0]}.json`), 'a');
    writeFileSync(path.join(dir, `${ids[4]}.json`), 'some bytes');
    symlinkSync(path.join(dir, `${ids[4]}.json`), path.join(dir, `${ids[5]}.json`));
    mkdirSync(path.join(dir, `${ids[6]}.json`));
    writeFileSync(path.join(dir, `${ids[7]}.json`), '');
    setParallelStatFrom(2, { chunk: 3, callerWaits: 'exit' });
    const before = statsFromWorker.count;
    const got = await readAll(statFiles(`${dir}/`, ids, '.json'), ids.length);
    expect(statsFromWorker.count - before).toBe(8);
    const file = (id: string) => {
      const real = lstatSync(path.join(dir, `${id}.json`));
      return { mtimeMs: real.mtimeMs, size: real.size, ino: real.ino, ctimeMs: real.ctimeMs };
    };
    expect(got).toEqual([file(ids[0]!), undefined, undefined, undefined, file(ids[4]!), null, null, file(ids[7]!)]);
  });

  it('gives each chunk to one side: the worker from the end, the caller from the start, meeting anywhere', async () => {
    const dir = tempDir('pipeline-stat-');
    for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), id);
    // A worker that takes the last chunk, waits until the caller has taken the first, then
    // carries on as the real one does: it must stop at the caller's chunk.
    const script = `const { workerData } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
const { prefix, suffix, shared } = workerData;
const names = Buffer.from(workerData.names).toString('latin1');
const state = new Int32Array(shared, 0, 4);
const out = new Float64Array(shared, 16);
const stat = (k) => { for (let i = k * 2; i < k * 2 + 2; i++) { const s = lstatSync(prefix + names.slice(i * 26, i * 26 + 26) + suffix); out[i * 4] = s.mtimeMs; out[i * 4 + 1] = s.size; out[i * 4 + 2] = s.ino; out[i * 4 + 3] = s.ctimeMs; } Atomics.store(state, k, 2); Atomics.notify(state, k); };
Atomics.store(state, 3, 1);
while (Atomics.load(state, 0) === 0) Atomics.wait(state, 0, 0, 10);
stat(3);
for (let k = 2; k >= 0; k--) { if (Atomics.compareExchange(state, k, 0, 1) !== 0) break; stat(k); }`;
    setParallelStatFrom(2, { script, chunk: 2, callerWaits: 'claim' });
    const before = statsFromWorker.count;
    const got = await readAll(statFiles(`${dir}/`, ids, '.json'), ids.length);
    expect(got).toEqual(ids.map(() => expect.objectContaining({ size: 26 })));
    // The caller took chunk 0 and, unless the worker got there first, chunk 1 or 2; the worker chunk 3 at least.
    const fromWorker = statsFromWorker.count - before;
    expect([2, 4, 6]).toContain(fromWorker);
  }, 10_000);

  it('stats a chunk itself when the worker died in it, without blocking or waiting 30 s', async () => {
    const dir = tempDir('pipeline-stat-');
    for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), id);
    // A worker that takes the first chunk and dies there (as one killed by a failing preload would).
    const script = `const { workerData } = require('node:worker_threads');
const state = new Int32Array(workerData.shared, 0, 1);
Atomics.store(state, 0, 1);
throw new Error('dies in its chunk');`;
    setParallelStatFrom(2, { script, chunk: 4, callerWaits: 'claim' });
    const before = statsFromWorker.count;
    const got = await readAll(statFiles(`${dir}/`, ids, '.json'), ids.length);
    expect(got).toEqual(ids.map(() => expect.objectContaining({ size: 26 })));
    expect(statsFromWorker.count).toBe(before);
  }, 10_000);

  it('stops the worker when the scan is closed early', async () => {
    const dir = tempDir('pipeline-stat-');
    for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), id);
    // A worker that takes the first chunk and never finishes it.
    const script = `const { workerData } = require('node:worker_threads');
Atomics.store(new Int32Array(workerData.shared, 0, 1), 0, 1);
setInterval(() => {}, 1000);`;
    setParallelStatFrom(2, { script, chunk: 8, callerWaits: 'claim' });
    const stats = statFiles(`${dir}/`, ids, '.json');
    const claimed = stats.claim(0); // waits for the worker's chunk
    stats.close();
    await claimed; // settled by the worker's exit, not after the 30 s it would be given
    expect(stats.at(7)).toEqual(expect.objectContaining({ size: 26 }));
  }, 10_000);

  it('keeps a store’s status index exact, and sees a hand edit in what the worker stats', async () => {
    const dir = tempDir('pipeline-store-');
    mkdirSync(path.join(dir, 'proposals'), { recursive: true });
    for (const id of ids) writeFileSync(path.join(dir, 'proposals', `${id}.json`), doc(id, 'pending'));
    setParallelStatFrom(2, { chunk: 3, callerWaits: 'exit' });
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
    expect(statsFromWorker.count - before).toBe(8);
  });
});

describe('ids packed into bytes', () => {
  it('gives back every id, in order or not, across blocks, and takes no more than it has room for', () => {
    const many = Array.from({ length: 1300 }, (_, i) => `01ARZ3NDEKTSV4RRFFQ${String(i).padStart(7, '0')}`);
    const writer = PackedIds.writer(many.length);
    for (const id of many) writer.push(id);
    expect(() => writer.push(many[0]!)).toThrow(RangeError);
    const packed = writer.done();
    expect(packed.length).toBe(1300);
    expect(Array.from({ length: 1300 }, (_, i) => packed.at(i))).toEqual(many);
    for (const i of [1299, 0, 512, 511, 1024, 7, 1023]) expect(packed.at(i)).toBe(many[i]);
    expect(Buffer.from(packed.shared).toString('latin1')).toBe(many.join(''));
    // One told to grow keeps every id past its first room (and past its first block of 512).
    const growing = PackedIds.writer(3, { grow: true });
    for (const id of many) growing.push(id);
    const grown = growing.done();
    expect(Array.from({ length: grown.length }, (_, i) => grown.at(i))).toEqual(many);
    const again = PackedIds.writer(3, { grow: true });
    for (const id of [...many].reverse()) again.push(id);
    const sorted = again.sorted();
    expect(Array.from({ length: sorted.length }, (_, i) => sorted.at(i))).toEqual(many);
  });

  it('sorts ids as strings sort: any order in, every one out once, none when there are none', () => {
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    let seed = 7;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 8;
    };
    // Shared prefixes (one millisecond's ids), duplicates of none, and the extremes of the alphabet.
    const ids = Array.from({ length: 3000 }, (_, i) =>
      Array.from({ length: 26 }, (_, at) => (at === 0 ? String(random() % 8) : at < 9 && i % 3 === 0 ? 'Z' : alphabet[random() % 32])).join(''),
    );
    ids.push('00000000000000000000000000', '7ZZZZZZZZZZZZZZZZZZZZZZZZZ');
    const unique = [...new Set(ids)];
    const packed = PackedIds.sortedInPlace(Buffer.from(unique.join(''), 'latin1'), unique.length);
    expect(Array.from({ length: packed.length }, (_, i) => packed.at(i))).toEqual([...unique].sort());
    expect(PackedIds.sortedInPlace(Buffer.alloc(0), 0).length).toBe(0);
    expect(PackedIds.sortedInPlace(Buffer.from(ids[0]!, 'latin1'), 1).at(0)).toBe(ids[0]);
    // All but one share a character where the order is decided: that pass must still be made.
    const pair = ['01ARZ3NDEKTSV4RRFFQ69G5FB0', '01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA0'];
    const three = PackedIds.sortedInPlace(Buffer.from(pair.join(''), 'latin1'), 3);
    expect([three.at(0), three.at(1), three.at(2)]).toEqual([...pair].sort());
  });
});
