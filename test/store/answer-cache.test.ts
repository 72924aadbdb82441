/** The file store's answer cache: one shared log of records, files for large or replaced values. */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FileAnswerCache, setLogBounds } from '../../engine/store/answer-cache.js';
import { FileStore } from '../../engine/store/file-store.js';
import { ROOT, tempDir } from '../helpers.js';

const digest = (key: string) => createHash('sha256').update(key).digest('hex');
const setup = () => {
  const dir = path.join(tempDir('pipeline-cache-'), 'cache');
  return { dir, log: path.join(dir, 'log.jsonl'), cache: new FileAnswerCache(dir) };
};
/** The log's records (its first line names the log; empty lines between records are harmless). */
const records = (log: string) =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{"k":'));
/** How many of this process's descriptors are open on `file` (Linux: /proc/self/fd). */
const descriptorsOn = (file: string) =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false; // closed while listed (the listing's own descriptor)
    }
  }).length;
const answer = (i: number) => ({ text: `{"verdict":"approve","n":${i}}`, usage: { input_tokens: i, output_tokens: 1 } });

/** A log of whole records ending at exactly `end` bytes (records of 60 KB, then one to pad), then `tail`. */
function writeLogUpTo(dir: string, log: string, end: number, tail = ''): void {
  mkdirSync(dir, { recursive: true });
  const header = '{"log":"pipeline answer cache","id":"0123456789abcdef"}\n';
  const lines = [header];
  let size = header.length;
  for (let i = 0; size < end - 130_000; i++) {
    const line = `{"k":"${digest(`filler ${i}`)}","v":"${'z'.repeat(60_000)}"}\n`;
    lines.push(line);
    size += line.length;
  }
  lines.push(`{"k":"${digest('pad')}","v":"${'p'.repeat(end - size - 80)}"}\n`, tail);
  writeFileSync(log, lines.join(''));
}

describe('the answer cache (file store)', () => {
  it('keeps small entries as records of one log: no file per entry', async () => {
    const { dir, log, cache } = setup();
    for (let i = 0; i < 50; i++) await cache.put(`key ${i}`, answer(i));
    expect(readdirSync(dir)).toEqual(['log.jsonl']);
    expect(records(log)).toHaveLength(50);
    for (let i = 0; i < 50; i++) expect(await cache.get(`key ${i}`)).toEqual(answer(i));
    expect(await cache.get('key 50')).toBeUndefined();
  });

  it('reads what another process appended, before and after its own first read', async () => {
    const { dir, cache } = setup();
    const other = new FileAnswerCache(dir);
    await cache.put('first', answer(1));
    expect(await other.get('first')).toEqual(answer(1));
    expect(await other.get('second')).toBeUndefined();
    await cache.put('second', answer(2));
    expect(await other.get('second')).toEqual(answer(2));
  });

  it('loses no record when several processes append at once while one reads', async () => {
    const { dir, log, cache } = setup();
    await cache.put('seed', answer(0));
    // Each writer then waits for every record and asks for all of them with the index it kept while
    // writing (its own records are indexed as it appends them): none of the others' may be missed.
    const script = (n: number) => `import { readFileSync } from 'node:fs';
      import { FileAnswerCache } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'store', 'answer-cache.js'))};
      const cache = new FileAnswerCache(${JSON.stringify(dir)});
      for (let i = 0; i < 100; i++) await cache.put('writer ${n} ' + i, { text: 'x'.repeat(i * 40), n: ${n}, i });
      while (readFileSync(${JSON.stringify(log)}, 'utf8').split('\\n').filter((line) => line.startsWith('{"k":')).length < 401)
        await new Promise((resolve) => setTimeout(resolve, 5));
      for (let w = 1; w <= 4; w++) for (let i = 0; i < 100; i++) if ((await cache.get('writer ' + w + ' ' + i))?.i !== i) process.exit(3);`;
    const writers = [1, 2, 3, 4].map(
      (n) => new Promise((resolve) => spawn(process.execPath, ['--input-type=module', '-e', script(n)], { stdio: 'inherit' }).on('exit', resolve)),
    );
    let done = false;
    const reading = (async () => {
      // Reads while the lines are being written: a half-written line must wait, not be skipped.
      while (!done) {
        await cache.get('writer 1 99');
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    expect(await Promise.all(writers)).toEqual([0, 0, 0, 0]);
    done = true;
    await reading;
    for (const reader of [cache, new FileAnswerCache(dir)])
      for (const n of [1, 2, 3, 4]) for (let i = 0; i < 100; i++) expect(await reader.get(`writer ${n} ${i}`)).toEqual({ text: 'x'.repeat(i * 40), n, i });
    // Every record is whole and on a line of its own (a writer that saw another's line half-written
    // may leave an empty line, which is harmless): none lost, none merged.
    expect(records(log)).toHaveLength(401);
    for (const line of records(log)) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('gives a large value its own file, and the latest value of a key written twice wins', async () => {
    const { dir, cache } = setup();
    const large = { rows: Array.from({ length: 10_000 }, (_, i) => `row ${i}`) };
    await cache.put('large', large);
    expect(readdirSync(dir)).toEqual([`${digest('large')}.json`]);
    expect(await cache.get('large')).toEqual(large);
    expect(await cache.get('large', 1000)).toBeUndefined();
    await cache.put('large', { v: 2 });
    await cache.put('small', { v: 1 });
    await cache.put('small', { v: 2 });
    await cache.put('small', { v: 3 });
    const other = new FileAnswerCache(dir);
    for (const reader of [cache, other]) {
      expect(await reader.get('large')).toEqual({ v: 2 });
      expect(await reader.get('small')).toEqual({ v: 3 });
    }
    // One record per key at most (its first small value), however often it is replaced.
    expect(records(path.join(dir, 'log.jsonl'))).toHaveLength(2);
  });

  it('gives every reader a key’s latest value, whoever wrote it and whenever the reader first looked', async () => {
    const { dir, log } = setup();
    const early = new FileAnswerCache(dir);
    expect(await early.get('anything')).toBeUndefined(); // looked before any file existed
    const writer = new FileAnswerCache(dir);
    await writer.put('k', { v: 1 });
    expect(await early.get('k')).toEqual({ v: 1 });
    await writer.put('k', { v: 2 }); // a second write: the key's file
    expect(await early.get('k')).toEqual({ v: 2 });
    // The log lost: the next write of the key is a record again, and the file must not outlive it.
    unlinkSync(log);
    await early.put('k', { v: 3 });
    for (const reader of [early, writer, new FileAnswerCache(dir)]) expect(await reader.get('k')).toEqual({ v: 3 });
  });

  it('counts a log whose last indexed record crosses 64 MiB as full: new entries get files', async () => {
    const { dir, log, cache } = setup();
    mkdirSync(dir, { recursive: true });
    const value = 'x'.repeat(60_000);
    const lines: string[] = [];
    for (let i = 0, size = 0; size < 64 * 1024 * 1024 + 1000; i++) {
      const line = `{"k":"${digest(`filler ${i}`)}","v":"${value}"}\n`;
      lines.push(line);
      size += line.length;
    }
    writeFileSync(log, lines.join(''));
    await cache.put('new', answer(1));
    expect(readdirSync(dir).sort()).toEqual([`${digest('new')}.json`, 'log.jsonl']);
    expect(await new FileAnswerCache(dir).get('new')).toEqual(answer(1));
    expect(await cache.get('filler 3')).toEqual(value);
  });

  it('still reads entries of the earlier layout (a file per key), and a record of the log overrides one', async () => {
    const { dir, cache } = setup();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${digest('old')}.json`), JSON.stringify(answer(7)));
    expect(await cache.get('old')).toEqual(answer(7));
    await new FileAnswerCache(dir).put('old', answer(8));
    expect(await cache.get('old')).toEqual(answer(8));
  });

  it('never brings back an older file of a key once a record replaced it', async () => {
    const { dir, log, cache } = setup();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${digest('k')}.json`), JSON.stringify({ n: 0 }));
    await cache.put('k', { n: 1 });
    expect(await new FileAnswerCache(dir).get('k')).toEqual({ n: 1 });
    unlinkSync(log);
    expect(await cache.get('k')).toBeUndefined();
  });

  it('sees a log truncated, or removed and made again, as another log', async () => {
    for (const lose of [(log: string) => truncateSync(log, 0), (log: string) => unlinkSync(log)]) {
      const { dir, log, cache } = setup();
      await cache.put('A', { n: 1 });
      for (let i = 0; i < 20; i++) await cache.put(`other ${i}`, answer(i));
      expect(await cache.get('A')).toEqual({ n: 1 });
      lose(log);
      const other = new FileAnswerCache(dir);
      await other.put('A', { n: 1 });
      await other.put('A', { n: 2 });
      await other.put('B', { n: 3 });
      // Longer than what `cache` had read: its offsets now fall inside another log.
      for (let i = 0; i < 25; i++) await other.put(`more ${i}`, answer(i));
      expect(await other.get('A')).toEqual({ n: 2 });
      expect(await cache.get('A')).toEqual({ n: 2 });
    }
  });

  it('reads at most 64 MiB of a log; past that, entries get files', async () => {
    const { dir, log, cache } = setup();
    mkdirSync(dir, { recursive: true });
    writeFileSync(log, '');
    truncateSync(log, 8 * 1024 * 1024 * 1024); // 8 GiB of zeros, holding no disk space
    expect(await cache.get('k')).toBeUndefined();
    await cache.put('k', answer(1));
    expect(readdirSync(dir).sort()).toEqual([`${digest('k')}.json`, 'log.jsonl']);
    expect(await cache.get('k')).toEqual(answer(1));
  });

  it('puts an entry in a file when the log cannot be used, and never throws from get', async () => {
    const { log, cache } = setup();
    mkdirSync(log, { recursive: true });
    await cache.put('k', answer(1));
    expect(await cache.get('k')).toEqual(answer(1));
    expect(await cache.get('missing')).toBeUndefined();
  });

  it('skips a torn record and garbage, and starts its next record on a line of its own', async () => {
    const { dir, log, cache } = setup();
    await cache.put('kept', answer(1));
    appendFileSync(log, `not json at all\n{"k":"${digest('forged')}","v":{"text":"not this"}}\n{"k":"${digest('torn')}","v":{"te`);
    await cache.put('after', answer(2));
    const other = new FileAnswerCache(dir);
    expect(await other.get('kept')).toEqual(answer(1));
    expect(await other.get('after')).toEqual(answer(2));
    expect(await other.get('torn')).toBeUndefined();
    expect(readFileSync(log, 'utf8').split('\n').at(-2)).toBe(`{"k":"${digest('after')}","v":${JSON.stringify(answer(2))}}`);
    // A line too long for any record, left without its newline, is read past whole: the next
    // record starts on a line of its own, and the writer finds it where it put it.
    appendFileSync(log, 'x'.repeat(200 * 1024));
    expect(await cache.get('after')).toEqual(answer(2));
    await cache.put('past', answer(3));
    expect(await cache.get('past')).toEqual(answer(3));
    expect(await new FileAnswerCache(dir).get('past')).toEqual(answer(3));
  });

  it('sees a log emptied in place and written again to the same size as another log, even while it appends', async () => {
    const { dir, log, cache } = setup();
    await cache.put('a0', answer(1));
    expect(await cache.get('a0')).toEqual(answer(1));
    const size = readFileSync(log).length;
    truncateSync(log, 0);
    // Another process starts the log again: its first line and one record of the same length.
    await new FileAnswerCache(dir).put('b0', answer(2));
    expect(readFileSync(log).length).toBe(size);
    await cache.put('a1', answer(3));
    expect(await cache.get('b0')).toEqual(answer(2));
    expect(await cache.get('a1')).toEqual(answer(3));
  });

  it('holds no long key between a lookup and a put that may never come (an outage)', async () => {
    const { cache } = setup();
    const kept = () => [...(cache as unknown as { digests: Map<string, string> }).digests.keys()];
    for (let i = 0; i < 140; i++) await cache.get(`${i} ${'p'.repeat(20 * 1024)}`);
    expect(kept()).toEqual([]);
    for (let i = 0; i < 140; i++) await cache.get(`${i} ${'p'.repeat(1000)}`);
    expect(kept().length).toBeLessThanOrEqual(128);
  });

  it('uses a record only when its whole digest matches the key', async () => {
    const { dir, log } = setup();
    mkdirSync(dir, { recursive: true });
    const wanted = digest('wanted');
    // The index keys records by a digest's first digits: a record that only shares those is not the key's.
    writeFileSync(log, `{"k":"${wanted.slice(0, 16)}${'0'.repeat(48)}","v":{"text":"someone else's"}}\n`);
    expect(await new FileAnswerCache(dir).get('wanted')).toBeUndefined();
  });

  it('treats an entry over the reader’s bound as missing', async () => {
    const { cache } = setup();
    await cache.put('big', { text: 'x'.repeat(4000) });
    expect(await cache.get('big', 1000)).toBeUndefined();
    expect(await cache.get('big', 10_000)).toEqual({ text: 'x'.repeat(4000) });
  });

  it('never follows a link where the log belongs: entries then get files', async () => {
    const { dir, log, cache } = setup();
    const outside = path.join(tempDir('pipeline-outside-'), 'target.jsonl');
    writeFileSync(outside, '');
    mkdirSync(dir, { recursive: true });
    symlinkSync(outside, log);
    await cache.put('k', answer(1));
    expect(readFileSync(outside, 'utf8')).toBe('');
    expect(await cache.get('k')).toEqual(answer(1));
    expect(readdirSync(dir).sort()).toEqual([`${digest('k')}.json`, 'log.jsonl']);
  });

  it('starts over when the log is removed or replaced', async () => {
    const { log, cache } = setup();
    await cache.put('a', answer(1));
    expect(await cache.get('a')).toEqual(answer(1));
    unlinkSync(log);
    expect(await cache.get('a')).toBeUndefined();
    await cache.put('b', answer(2));
    expect(await cache.get('b')).toEqual(answer(2));
    expect(await cache.get('a')).toBeUndefined();
    // Replaced by a shorter log (renamed over it): read from its start, not from the old offset.
    const replacement = `${log}.new`;
    writeFileSync(replacement, `{"k":"${digest('c')}","v":${JSON.stringify(answer(3))}}\n`);
    renameSync(replacement, log);
    expect(await cache.get('c')).toEqual(answer(3));
    expect(await cache.get('b')).toBeUndefined();
  });

  it('appends to the log at its path, never to one removed or replaced since its last put', async () => {
    const replace = (log: string) => {
      writeFileSync(`${log}.new`, `{"log":"pipeline answer cache","id":"0000000000000000"}\n`);
      renameSync(`${log}.new`, log);
    };
    const losses = [(log: string) => unlinkSync(log), replace, (log: string) => rmSync(path.dirname(log), { recursive: true })];
    for (const lose of losses) {
      const { dir, log, cache } = setup();
      for (let i = 0; i < 3; i++) await cache.put(`before ${i}`, answer(i));
      lose(log);
      await cache.put('after', answer(9));
      await cache.put('after too', answer(10));
      expect(records(log)).toEqual([
        `{"k":"${digest('after')}","v":${JSON.stringify(answer(9))}}`,
        `{"k":"${digest('after too')}","v":${JSON.stringify(answer(10))}}`,
      ]);
      const other = new FileAnswerCache(dir);
      expect(await other.get('after')).toEqual(answer(9));
      expect(await other.get('after too')).toEqual(answer(10));
      expect(await other.get('before 0')).toBeUndefined();
    }
  });

  it('keeps one descriptor of the log open between puts, and gives it back on close', async () => {
    const { log, cache } = setup();
    for (let i = 0; i < 5; i++) await cache.put(`key ${i}`, answer(i));
    expect(descriptorsOn(log)).toBe(1);
    cache.close();
    expect(descriptorsOn(log)).toBe(0);
    // Still usable after close: the next put opens the log again.
    await cache.put('later', answer(7));
    await cache.put('later still', answer(8));
    expect(await cache.get('later still')).toEqual(answer(8));
    cache.close();

    const location = tempDir('pipeline-cache-store-');
    const store = new FileStore({ dir: location, ledgers: {} });
    await store.cache.put('a', answer(1));
    await store.cache.put('b', answer(2));
    const storeLog = path.join(location, 'cache', 'log.jsonl');
    expect(descriptorsOn(storeLog)).toBe(1);
    await store.close();
    expect(descriptorsOn(storeLog)).toBe(0);
  });

  it('keeps bytes in a file of their own beside the log, and never reads or writes them through a link', async () => {
    const { dir, log, cache } = setup();
    await cache.put('k', answer(1));
    await cache.putBytes('k', Uint8Array.of(1, 2, 3));
    const file = path.join(dir, `${digest('k')}.bin`);
    expect(readdirSync(dir).sort()).toEqual([path.basename(file), 'log.jsonl']);
    expect([...readFileSync(file)]).toEqual([1, 2, 3]);
    expect(records(log)).toHaveLength(1);
    expect(await cache.get('k')).toEqual(answer(1));
    // A link planted where the bytes belong: read as nothing, and replaced (not written through) by the next put.
    const outside = path.join(tempDir('pipeline-outside-'), 'target.bin');
    writeFileSync(outside, 'outside');
    unlinkSync(file);
    symlinkSync(outside, file);
    expect(await cache.getBytes('k')).toBeUndefined();
    await cache.putBytes('k', Uint8Array.of(4, 5));
    expect(readFileSync(outside, 'utf8')).toBe('outside');
    expect([...(await cache.getBytes('k'))!]).toEqual([4, 5]);
  });

  it('writes nothing through a cache directory that became a link while it kept the log open', async () => {
    const { dir, cache } = setup();
    await cache.put('a', answer(1));
    await cache.put('b', answer(2));
    const outside = path.join(tempDir('pipeline-outside-'), 'cache');
    renameSync(dir, outside);
    symlinkSync(outside, dir);
    const before = readFileSync(path.join(outside, 'log.jsonl'), 'utf8');
    await expect(cache.put('c', answer(3))).rejects.toThrow(/symbolic link/);
    await expect(cache.put('big', { text: 'x'.repeat(70 * 1024) })).rejects.toThrow(/symbolic link/);
    expect(readFileSync(path.join(outside, 'log.jsonl'), 'utf8')).toBe(before);
    expect(readdirSync(outside)).toEqual(['log.jsonl']);
    // Nor is anything read through it: what the linked directory holds is no entry of this store.
    expect(await cache.get('a')).toBeUndefined();
    expect(await new FileAnswerCache(dir).get('b')).toBeUndefined();
  });

  it('starts its record on a line of its own after a torn line longer than any record, even while it keeps the log open', async () => {
    const { dir, log, cache } = setup();
    await cache.put('a', answer(1));
    await cache.put('b', answer(2));
    appendFileSync(log, 'x'.repeat(200 * 1024));
    await cache.put('c', answer(3));
    expect(await cache.get('c')).toEqual(answer(3));
    expect(await new FileAnswerCache(dir).get('c')).toEqual(answer(3));
    expect(records(log).at(-1)).toBe(`{"k":"${digest('c')}","v":${JSON.stringify(answer(3))}}`);
  });

  it('reads nothing inside a line longer than any record as a record, wherever its reads start and stop', async () => {
    const { dir, log, cache } = setup();
    await cache.put('seed', answer(1));
    const planted = `{"k":"${digest('victim')}","v":"planted mid-line"}`;
    // One line of over 1 MiB that ends with a record's bytes, at a read's boundary: a fresh reader
    // reads 1 MiB at a time from the log's start.
    const before = readFileSync(log).length;
    appendFileSync(log, `${'x'.repeat(1024 * 1024 - before)}${planted}\n`);
    await cache.put('after', answer(2));
    for (const reader of [cache, new FileAnswerCache(dir)]) {
      expect(await reader.get('victim')).toBeUndefined();
      expect(await reader.get('after')).toEqual(answer(2));
      expect(await reader.get('seed')).toEqual(answer(1));
    }
  });

  it('indexes another process’s record after its own first append that ended a line longer than any record', async () => {
    const { dir, log, cache } = setup();
    await cache.put('seed', answer(1));
    appendFileSync(log, 'x'.repeat(200 * 1024)); // a torn line longer than any record: the index skips it
    expect(await cache.get('nothing')).toBeUndefined();
    await cache.put('k1', answer(2)); // after a newline that ends the long line
    await new FileAnswerCache(dir).put('k2', answer(3));
    expect(await cache.get('k2')).toEqual(answer(3));
    expect(await cache.get('k1')).toEqual(answer(2));
  });

  it('gives a record a file when it would end past the part of the log that is read, also after a torn line the index stopped before', async () => {
    const { dir, log, cache } = setup();
    const bound = 2 * 1024 * 1024; // (64 MiB; here 2 MiB)
    setLogBounds({ bytes: bound });
    onTestFinished(() => setLogBounds());
    // 10 KiB short of the bound, the last 100 KiB a torn line (a killed writer's): the index has
    // read to its start; a record of 30 KiB, appended at the log's end, would cross the bound.
    writeLogUpTo(dir, log, bound - 10 * 1024 - 100 * 1024, `{"k":"${digest('torn')}","v":"${'t'.repeat(100 * 1024 - 77)}`);
    expect(readFileSync(log).length).toBe(bound - 10 * 1024);
    const value = { text: 'a'.repeat(30 * 1024), usage: null };
    await cache.put('answer', value);
    expect(readdirSync(dir).sort()).toEqual([`${digest('answer')}.json`, 'log.jsonl']);
    expect(await cache.get('answer')).toEqual(value);
    expect(await new FileAnswerCache(dir).get('answer')).toEqual(value);
  });

  it('counts a log of more records, or lines, than it indexes as full (200,000 and 4,000,000; here 2,000 and 40,000): a hostile log of tiny lines costs a bounded first read', async () => {
    setLogBounds({ records: 2_000, lines: 40_000 });
    onTestFinished(() => setLogBounds());
    for (const kind of ['records', 'lines'] as const) {
      const { dir, log, cache } = setup();
      mkdirSync(dir, { recursive: true });
      const header = '{"log":"pipeline answer cache","id":"0123456789abcdef"}\n';
      const body = kind === 'records' ? Array.from({ length: 2_001 }, (_, i) => `{"k":"${digest(`tiny ${i}`)}","v":${i}}\n`).join('') : '\n'.repeat(40_001);
      writeFileSync(log, header + body);
      expect(await cache.get('tiny 0'), kind).toBe(kind === 'records' ? 0 : undefined);
      await cache.put('new', answer(1));
      expect(readdirSync(dir).sort(), kind).toEqual([`${digest('new')}.json`, 'log.jsonl']);
      expect(await new FileAnswerCache(dir).get('new'), kind).toEqual(answer(1));
    }
  });

  it('stops appending where a fresh reader stops reading: one process filling the log to its count of records loses no entry', async () => {
    setLogBounds({ records: 50 });
    onTestFinished(() => setLogBounds());
    const { dir, cache } = setup();
    // 150 answers of 20 KB: 3 MB, so a fresh reader reading 1 MiB at a time stops after ~50.
    const big = (i: number) => ({ text: `${'v'.repeat(20_000)}${i}`, usage: null });
    for (let i = 0; i < 150; i++) {
      expect(await cache.get(`key ${i}`)).toBeUndefined();
      await cache.put(`key ${i}`, big(i));
    }
    const reader = new FileAnswerCache(dir);
    for (let i = 0; i < 150; i++) expect(await reader.get(`key ${i}`), `key ${i}`).toEqual(big(i));
  });

  it('gives a record a file when it would end past the part of the log that is indexed (never written where no reader looks)', async () => {
    const { dir, log, cache } = setup();
    setLogBounds({ bytes: 2 * 1024 * 1024 }); // (64 MiB; here 2 MiB)
    onTestFinished(() => setLogBounds());
    // The log ends 100 bytes short of the bound: a record of 500 bytes cannot fit.
    writeLogUpTo(dir, log, 2 * 1024 * 1024 - 100);
    const value = { text: 'a'.repeat(500), usage: null };
    await cache.put('answer', value);
    expect(readdirSync(dir).sort()).toEqual([`${digest('answer')}.json`, 'log.jsonl']);
    expect(await cache.get('answer')).toEqual(value);
    expect(await new FileAnswerCache(dir).get('answer')).toEqual(value);
  });
});
