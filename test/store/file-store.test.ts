/** The file store: the shared contract, plus what only a file store can get wrong. */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { FileStore, journalListings, setListingMax } from '../../engine/store/file-store.js';
import { Journal } from '../../engine/store/journal.js';
import { directoryListingsSkipped, localFileSystem, scanReads, setCacheChunk } from '../../engine/store/proposal-index.js';
import type { AuditRow, Store } from '../../engine/store/types.js';
import { ROOT, tempDir } from '../helpers.js';
import { processSuffix } from '../../engine/util/temp-names.js';
import { LAYOUT, storeContract } from './contract.js';
import { fileStoreHooks } from './file-hooks.js';

const make = (dir = tempDir('pipeline-store-')) => new FileStore({ dir, ...LAYOUT });

/** The pid of a process that has exited: what a SIGKILLed owner looks like. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

storeContract('file store', {
  make: async (layout) => new FileStore({ dir: tempDir('pipeline-store-'), ...layout }),
  reopen: async (store) => make(store.location),
  ...fileStoreHooks,
});

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const created: AuditRow = { at: '2026-11-01T00:00:00Z', id: ID, event: 'create', from: null, to: 'pending', stage: 'test', actor: 'cli' };
const pending = { id: ID, artifact_id: 'a', created_at: '2026-11-01T00:00:00Z', status: 'pending' };

async function seed(store: Store): Promise<string> {
  const result = await store.create({ proposal: pending, key: 'a', audit: created });
  return result.ok ? result.version : '';
}

/** The proposal approved and promoted at `version`: a commit that writes a pool entry. */
function approvedWithEntry(version: string) {
  return {
    id: ID,
    version,
    next: { ...pending, status: 'approved', promoted_at: '2026-11-02T00:00:00Z' },
    audit: [{ ...created, event: 'approve', from: 'pending', to: 'approved' }],
    entries: [{ op: 'put' as const, collection: 'approved', id: ID, entry: { id: ID } }],
  };
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const lines = (file: string) => readFileSync(file, 'utf8').split('\n');

/** Run `body` with Date standing still at `ms` (however long the work takes), until it moves it on. */
async function withClockAt(ms: number, body: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    vi.setSystemTime(ms);
    await body();
  } finally {
    vi.useRealTimers();
  }
}

describe('file store: files', () => {
  it('writes pretty-printed JSON with a trailing newline and leaves no temp file', async () => {
    const store = make();
    await seed(store);
    const text = readFileSync(path.join(store.location, 'proposals', `${ID}.json`), 'utf8');
    expect(text).toBe(`${JSON.stringify(pending, null, 2)}\n`);
    expect(readdirSync(path.join(store.location, 'proposals'))).toEqual([`${ID}.json`]);
  });

  it('never changes a replaced version under a reader that opened it (a copy, a backup, a slow process)', async () => {
    const store = make();
    let version = await seed(store);
    const commit = async (status: string) => {
      const committed = await store.commit({ id: ID, version, next: { ...pending, status }, audit: [{ ...created, event: 'set', from: null, to: status }] });
      if (!committed.ok) throw new Error(committed.reason);
      version = committed.version;
    };
    await commit('confirmed');
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    const opened = openSync(file, 'r');
    try {
      const before = version;
      for (const status of ['approved', 'rejected', 'confirmed', 'approved']) {
        await commit(status);
        // Long enough for any reuse of the replaced file's inode to have happened.
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      const buffer = Buffer.alloc(64 * 1024);
      expect(buffer.toString('utf8', 0, readSync(opened, buffer, 0, buffer.length, 0))).toBe(before);
    } finally {
      closeSync(opened);
    }
  });

  it('refuses any id that is not a ULID before touching the file system', async () => {
    const store = make(path.join(tempDir('pipeline-store-'), 'not-yet'));
    for (const id of ['../../etc/passwd', 'a/b', '01arz3ndektsv4rrffq69g5fav', '', `${ID}/..`]) await expect(store.read(id)).rejects.toThrow(/invalid id/);
    expect(existsSync(store.location)).toBe(false);
  });

  it('starts a row on a fresh line after a torn one, and readers skip the torn line', async () => {
    const store = make();
    await store.appendLedger('declined', { n: 1 });
    appendFileSync(path.join(store.location, 'declined.jsonl'), '{"n": 2, "tor');
    await make(store.location).appendLedger('declined', { n: 3 });
    expect(await all(store.ledger('declined'))).toEqual([{ n: 1 }, { n: 3 }]);
    expect(lines(path.join(store.location, 'declined.jsonl'))).toEqual(['{"n":1}', '{"n": 2, "tor', '{"n":3}', '']);
  });

  it('never leaves an empty line after a torn one when several processes append at once', async () => {
    const store = make();
    await store.appendLedger('declined', { n: 0 });
    const file = path.join(store.location, 'declined.jsonl');
    appendFileSync(file, '{"torn');
    const script = (n: number) => `import { FileStore } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'store', 'file-store.js'))};
      const store = new FileStore({ dir: ${JSON.stringify(store.location)}, ledgers: { declined: 'declined.jsonl' } });
      for (let i = 0; i < 20; i++) await store.appendLedger('declined', { writer: ${n}, i });`;
    await Promise.all(
      [1, 2, 3, 4].map(
        (n) => new Promise((resolve) => spawn(process.execPath, ['--input-type=module', '-e', script(n)], { stdio: 'inherit' }).on('exit', resolve)),
      ),
    );
    const text = lines(file);
    expect(text.slice(0, -1).filter((line) => line === '')).toEqual([]);
    expect(text.filter((line) => line.startsWith('{"writer"'))).toHaveLength(80);
  });

  it('sees a proposal edited by hand in place (the status index is validated, not trusted)', async () => {
    const store = make();
    await seed(store);
    expect((await store.counts(['pending', 'confirmed'])).counts).toEqual({ pending: 1, confirmed: 0 });
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    writeFileSync(file, readFileSync(file, 'utf8').replace('"pending"', '"confirmed"'));
    expect((await store.counts(['pending', 'confirmed'])).counts).toEqual({ pending: 0, confirmed: 1 });
    expect((await all(store.index({ status: 'confirmed' }))).map((entry) => entry.id)).toEqual([ID]);
  });

  it('reads again a proposal whose signature was too fresh to trust: replaced within one mtime step', async () => {
    const store = make();
    await seed(store);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    // A file system with one-second mtimes: the file's mtime is this second, exactly. The clock
    // stands still half a second later.
    const second = Math.floor(Date.now() / 1000);
    await withClockAt(second * 1000 + 500, async () => {
      utimesSync(file, second, second);
      expect((await store.counts(['pending', 'decline'])).counts).toEqual({ pending: 1, decline: 0 });
      // Within that second the file is written again: the same size, inode and mtime, another status.
      writeFileSync(file, readFileSync(file, 'utf8').replace('"pending"', '"decline"'));
      utimesSync(file, second, second);
      expect((await store.counts(['pending', 'decline'])).counts).toEqual({ pending: 0, decline: 1 });
    });
  });

  it('trusts an index entry once it has settled, and reads a fresh one until it does', async () => {
    const store = make();
    await seed(store);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    const scans = async () => {
      const before = scanReads.count;
      await store.counts(['pending']);
      return scanReads.count - before;
    };
    const now = Math.floor(Date.now() / 1000);
    // A file's last change is the later of its mtime and its ctime (now, whatever utimes sets):
    // the clock runs 5 s ahead, so the seed and the utimes below are settled changes.
    await withClockAt(now * 1000 + 5000, async () => {
      utimesSync(file, now - 60, now - 60);
      expect([await scans(), await scans()]).toEqual([1, 0]); // changed seconds ago: read once
      utimesSync(file, now + 5, now + 5);
      expect([await scans(), await scans()]).toEqual([1, 1]); // fresh: read each time
      vi.setSystemTime(now * 1000 + 10_000);
      expect([await scans(), await scans()]).toEqual([1, 0]); // settled: recorded again, then trusted
    });
  });

  it('sees an edit in place whose mtime was put back: the ctime moved', async () => {
    const store = make();
    await seed(store);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    const now = Math.floor(Date.now() / 1000);
    await withClockAt(now * 1000 + 5000, async () => {
      utimesSync(file, now - 60, now - 60);
      expect((await store.counts(['pending', 'passed'])).counts).toEqual({ pending: 1, passed: 0 });
      expect((await store.counts(['pending', 'passed'])).counts).toEqual({ pending: 1, passed: 0 }); // trusted
      // Same size, same inode, the mtime put back (as `touch -r` does).
      writeFileSync(file, readFileSync(file, 'utf8').replace('"pending"', '"passed" '));
      utimesSync(file, now - 60, now - 60);
      vi.setSystemTime(now * 1000 + 10_000); // the edit itself is settled too: only the signature tells
      expect((await store.counts(['pending', 'passed'])).counts).toEqual({ pending: 0, passed: 1 });
    });
  });

  it('takes no cache whose header is not exactly its own', async () => {
    const store = make();
    await seed(store);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    utimesSync(file, 1_000_000, 1_000_000);
    const cache = path.join(store.location, '.index', 'proposals.tsv');
    // The clock 5 s ahead: the file's last change (its ctime, moved by utimes) is settled.
    await withClockAt(Date.now() + 5000, async () => {
      await store.counts(['pending']);
      const [header, ...rest] = readFileSync(cache, 'utf8').split('\n');
      // The format, the marked fields, when the scan began, and the directory it listed (settled).
      expect(header).toMatch(/^pipeline-index 5\tpromoted_at\t\d+\t[\d.]+:[\d.]+:\d+:\d+\t1$/);
      const [format, fields, at, directory, entries] = header!.split('\t');
      // The cached line now claims another status: only a cache the scan accepts would report it.
      const lying = rest.map((line) => line.replace('\tpending\t', '\tlying\t'));
      const counted = async (head: string) => {
        writeFileSync(cache, [head, ...lying].join('\n'));
        return (await store.counts(['pending', 'lying'])).counts;
      };
      expect(await counted(header!)).toEqual({ pending: 0, lying: 1 }); // accepted (and trusted)
      expect(await counted([format, fields, at].join('\t'))).toEqual({ pending: 0, lying: 1 }); // no directory: listed
      for (const head of [
        `${header} `,
        [format, fields, ` ${at}`, directory, entries].join('\t'),
        [format, fields, '', directory, entries].join('\t'),
        [format, fields, at, directory].join('\t'),
        [format, fields, at, `${directory}:1`, entries].join('\t'),
        [format, fields, at, 'x', entries].join('\t'),
        [format, fields, at, directory, 'x'].join('\t'),
        [format, `${fields}\t`, at, directory, entries].join('\t'),
        'pipeline-index 4\tpromoted_at',
      ])
        expect([head, await counted(head)]).toEqual([head, { pending: 1, lying: 0 }]);
    });
  });

  it('lists the proposals directory only when it changed since a scan that saw it settled', async () => {
    const store = make();
    await seed(store);
    const dir = path.join(store.location, 'proposals');
    const skipped = async (statuses: string[]) => {
      const before = directoryListingsSkipped.count;
      const { counts } = await store.counts(statuses);
      return [counts, directoryListingsSkipped.count - before];
    };
    const write = (id: string, status: string) => writeFileSync(path.join(dir, `${id}.json`), `${JSON.stringify({ ...pending, id, status }, null, 2)}\n`);
    // Changed just now: not settled, so listed each time and never recorded.
    expect([await skipped(['pending']), await skipped(['pending'])]).toEqual([
      [{ pending: 1 }, 0],
      [{ pending: 1 }, 0],
    ]);
    const header = () =>
      readFileSync(path.join(store.location, '.index', 'proposals.tsv'), 'utf8')
        .split('\n')[0]!
        .split('\t');
    expect(header()).toHaveLength(3); // format, fields, scan time
    // Its mtime put back a minute: its ctime says it changed just now, so still not recorded.
    const minuteAgo = Math.floor(Date.now() / 1000) - 60;
    utimesSync(dir, minuteAgo, minuteAgo);
    expect(await skipped(['pending'])).toEqual([{ pending: 1 }, 0]);
    expect(header()).toHaveLength(3);
    // The clock 5 s ahead: the directory's last change has settled. Recorded, then trusted.
    await withClockAt(Date.now() + 5000, async () => {
      expect(await skipped(['pending'])).toEqual([{ pending: 1 }, 0]);
      expect(header()).toHaveLength(5); // and the directory, with how many lines follow
      expect(await skipped(['pending'])).toEqual([{ pending: 1 }, 1]);
      // A file added by hand moves the directory's mtime and ctime: listed again.
      const added = '01ARZ3NDEKTSV4RRFFQ69G5FB1';
      write(added, 'confirmed');
      expect(await skipped(['pending', 'confirmed'])).toEqual([{ pending: 1, confirmed: 1 }, 0]);
      // Its mtime put back exactly (`touch -r`): the ctime still moved.
      utimesSync(dir, minuteAgo, minuteAgo);
      const another = '01ARZ3NDEKTSV4RRFFQ69G5FB2';
      vi.setSystemTime(Date.now() + 5000);
      expect(await skipped(['pending', 'confirmed'])).toEqual([{ pending: 1, confirmed: 1 }, 0]);
      expect(await skipped(['pending', 'confirmed'])).toEqual([{ pending: 1, confirmed: 1 }, 1]);
      write(another, 'confirmed');
      utimesSync(dir, minuteAgo, minuteAgo);
      expect(lstatSync(dir).mtimeMs).toBe(minuteAgo * 1000);
      vi.setSystemTime(Date.now() + 5000);
      expect(await skipped(['pending', 'confirmed'])).toEqual([{ pending: 1, confirmed: 2 }, 0]);
      // Removed by hand: listed again, and not counted.
      expect(await skipped(['pending', 'confirmed'])).toEqual([{ pending: 1, confirmed: 2 }, 1]);
      rmSync(path.join(dir, `${added}.json`));
      expect(await skipped(['pending', 'confirmed'])).toEqual([{ pending: 1, confirmed: 1 }, 0]);
    });
  });

  it('records the directory only if it had settled when the scan looked at it, however long the listing took', async () => {
    const store = make();
    await seed(store); // the directory changed just now
    const header = () =>
      readFileSync(path.join(store.location, '.index', 'proposals.tsv'), 'utf8')
        .split('\n')[0]!
        .split('\t');
    // The first reading of the clock is the scan's look at the directory; every later one comes
    // 5 s on, as after a listing that took that long (a slow disk, NFS, a huge directory).
    const real = Date.now.bind(Date);
    let first = true;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => {
      const now = first ? real() : real() + 5000;
      first = false;
      return now;
    });
    try {
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
    } finally {
      clock.mockRestore();
    }
    expect(header()).toHaveLength(3); // not recorded: a name added during the listing would share its times
  });

  it('lists the directory on every scan where its file system is not this machine’s (its clock is not ours)', async () => {
    const store = make();
    await seed(store);
    const local = vi.spyOn(localFileSystem, 'test').mockReturnValue(false);
    try {
      await withClockAt(Date.now() + 5000, async () => {
        for (let round = 0; round < 3; round++) {
          const before = directoryListingsSkipped.count;
          expect([round, (await store.counts(['pending'])).counts, directoryListingsSkipped.count - before]).toEqual([round, { pending: 1 }, 0]);
        }
      });
    } finally {
      local.mockRestore();
    }
    const header = readFileSync(path.join(store.location, '.index', 'proposals.tsv'), 'utf8').split('\n')[0]!;
    expect(header.split('\t')).toHaveLength(3);
  });

  it('records and trusts a directory whose times are before 1970', async () => {
    const store = make();
    await seed(store);
    const dir = path.join(store.location, 'proposals');
    const sixties = new Date('1960-01-01T00:00:00Z'); // as a Date: Node takes a negative number of seconds for now
    utimesSync(dir, sixties, sixties);
    expect(lstatSync(dir).mtimeMs).toBe(-315_619_200_000);
    await withClockAt(Date.now() + 5000, async () => {
      const skipped = async () => {
        const before = directoryListingsSkipped.count;
        await store.counts(['pending']);
        return directoryListingsSkipped.count - before;
      };
      expect([await skipped(), await skipped()]).toEqual([0, 1]);
    });
  });

  it('lists the directory each time while something named like a proposal is not a file (reported each time)', async () => {
    const store = make();
    await seed(store);
    const dir = path.join(store.location, 'proposals');
    const link = '01ARZ3NDEKTSV4RRFFQ69G5FB3';
    symlinkSync(path.join(dir, `${ID}.json`), path.join(dir, `${link}.json`));
    await withClockAt(Date.now() + 5000, async () => {
      for (let round = 0; round < 3; round++) {
        const before = directoryListingsSkipped.count;
        const listed = (await all(store.list({ status: 'pending' }))).map((entry) => (entry.kind === 'found' ? entry.stored.id : `${entry.id} ${entry.kind}`));
        expect([round, listed, directoryListingsSkipped.count - before]).toEqual([round, [ID, `${link} malformed`], 0]);
      }
    });
  });

  it('reports a proposal file past any proposal’s size as malformed, reads at most a byte past the bound, and reads it again only once it changes', async () => {
    const store = make();
    await seed(store);
    const big = '01ARZ3NDEKTSV4RRFFQ69G5FB4';
    const file = path.join(store.location, 'proposals', `${big}.json`);
    await withClockAt(Date.now() + 5000, async () => {
      await all(store.index());
      writeFileSync(file, '{"status": "pending", "padding": "');
      truncateSync(file, 16 * 1024 * 1024 + 1); // sparse: costs no disk
      for (let round = 0; round < 3; round++) {
        const reads = scanReads.count;
        const listed = (await all(store.list({ status: 'pending' }))).map((entry) => (entry.kind === 'found' ? entry.stored.id : `${entry.id} ${entry.kind}`));
        const counted = (await all(store.index())).filter((entry) => entry.status === 'pending').map((entry) => entry.id);
        // The first scan reads the new file (and refuses it past the bound); later ones trust its signature.
        expect([round, listed, counted, scanReads.count - reads]).toEqual([round, [ID, `${big} malformed`], [ID], round === 0 ? 1 : 0]);
      }
    });
    expect(await store.read(big)).toEqual({ kind: 'malformed', reason: 'larger than 16 MiB' });
  });

  it('lists the directory when the cache under a trusted directory is not what a scan writes', async () => {
    const store = make();
    const ids = ['01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA2', '01ARZ3NDEKTSV4RRFFQ69G5FA3'];
    const dir = path.join(store.location, 'proposals');
    mkdirSync(dir, { recursive: true });
    for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), `${JSON.stringify({ ...pending, id }, null, 2)}\n`);
    const cache = path.join(store.location, '.index', 'proposals.tsv');
    await withClockAt(Date.now() + 5000, async () => {
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 3 });
      const [header, ...rest] = readFileSync(cache, 'utf8').split('\n');
      expect(header!.split('\t')).toHaveLength(5);
      const [a, b, c] = rest;
      // Out of order, one line twice, one left out (cut short), one not a proposal's: each file is
      // counted as the directory says.
      for (const broken of [
        [b, a, c],
        [a, a, c],
        [a, b],
        [a, `x${b}`, c],
      ]) {
        writeFileSync(cache, [header, ...broken, ''].join('\n'));
        const before = directoryListingsSkipped.count;
        const counts = (await store.counts(['pending'])).counts;
        expect([broken.length, counts, directoryListingsSkipped.count - before]).toEqual([broken.length, { pending: 3 }, 0]);
      }
    });
  });

  it('works again after its caches are deleted', async () => {
    const store = make();
    await seed(store);
    await store.counts(['pending']);
    rmSync(path.join(store.location, '.index', 'proposals.tsv'), { force: true });
    expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
  });

  it('lists a store it has not indexed yet (or files changed since) exactly as it lists an indexed one', async () => {
    const store = make();
    const ids = ['01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA2', '01ARZ3NDEKTSV4RRFFQ69G5FA3', '01ARZ3NDEKTSV4RRFFQ69G5FA4'];
    const dir = path.join(store.location, 'proposals');
    mkdirSync(dir, { recursive: true });
    const write = (id: string, status: string) => writeFileSync(path.join(dir, `${id}.json`), `${JSON.stringify({ ...pending, id, status }, null, 2)}\n`);
    ids.forEach((id, i) => write(id, i % 2 ? 'confirmed' : 'pending'));
    writeFileSync(path.join(dir, '01ARZ3NDEKTSV4RRFFQ69G5FA5.json'), '{"status": "confirmed", trunc');
    const listing = async () =>
      (await all(store.list({ status: 'confirmed' }))).map((listed) =>
        listed.kind === 'found' ? [listed.stored.id, listed.stored.proposal['status'], listed.stored.version] : [listed.id, listed.kind],
      );
    const text = (id: string) => readFileSync(path.join(dir, `${id}.json`), 'utf8');
    const first = await listing(); // no index: the scan reads every file, the listing uses those reads
    expect(first).toEqual([
      [ids[1], 'confirmed', text(ids[1]!)],
      [ids[3], 'confirmed', text(ids[3]!)],
      ['01ARZ3NDEKTSV4RRFFQ69G5FA5', 'malformed'],
    ]);
    expect(existsSync(path.join(store.location, '.index', 'proposals.tsv'))).toBe(true);
    expect(await listing()).toEqual(first); // indexed: the same, read again
    write(ids[0]!, 'confirmed');
    write(ids[1]!, 'pending');
    const changed = await listing(); // two files changed since the index: read by the scan, listed as they are now
    expect(changed).toEqual([
      [ids[0], 'confirmed', text(ids[0]!)],
      [ids[3], 'confirmed', text(ids[3]!)],
      ['01ARZ3NDEKTSV4RRFFQ69G5FA5', 'malformed'],
    ]);
    // What a listing hands out is the file's own text: a commit on it applies.
    const [, , version] = changed[0] as [string, string, string];
    const next = { ...pending, id: ids[0]!, status: 'approved' };
    expect(
      await store.commit({ id: ids[0]!, version, next, audit: [{ ...created, id: ids[0]!, event: 'approve', from: 'confirmed', to: 'approved' }] }),
    ).toMatchObject({ ok: true });
  });
  it('lists by what each file says now, even where a settled index says otherwise', async () => {
    const store = make();
    const ids = ['01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA2', '01ARZ3NDEKTSV4RRFFQ69G5FA3', '01ARZ3NDEKTSV4RRFFQ69G5FA4'];
    const dir = path.join(store.location, 'proposals');
    mkdirSync(dir, { recursive: true });
    const file = (id: string) => path.join(dir, `${id}.json`);
    const past = new Date(Date.now() - 60_000);
    const write = (id: string, status: string) => {
      writeFileSync(file(id), `${JSON.stringify({ ...pending, id, status }, null, 2)}\n`);
      utimesSync(file(id), past, past);
    };
    for (const id of ids) write(id, 'confirmed');
    await store.counts(['confirmed']); // indexed, and trusted: written a minute before
    const listed = async (status: string) => (await all(store.list({ status }))).map((entry) => (entry.kind === 'found' ? entry.stored.id : entry.kind));
    expect(await listed('confirmed')).toEqual(ids);
    write(ids[0]!, 'pending'); // changed by hand, its mtime put back
    rmSync(file(ids[1]!)); // gone
    writeFileSync(file(ids[2]!), '{"status": "confirmed", trunc'); // broken
    // A malformed file is reported by every listing.
    expect(await listed('confirmed')).toEqual(['malformed', ids[3]]);
    expect(await listed('pending')).toEqual([ids[0], 'malformed']);
  });

  it('a listing settles no racy entry of the index without a look at its file', async () => {
    // An entry recorded within two seconds of its file's write is racy: a later write in the
    // same mtime step can keep its signature. A listing that rewrites the index must check it.
    const store = make();
    const [file, other] = ['01ARZ3NDEKTSV4RRFFQ69G5FB1', '01ARZ3NDEKTSV4RRFFQ69G5FB2'];
    const dir = path.join(store.location, 'proposals');
    mkdirSync(dir, { recursive: true });
    const at = (id: string) => path.join(dir, `${id}.json`);
    const past = new Date(Date.now() - 60_000);
    writeFileSync(at(file), `${JSON.stringify({ ...pending, id: file, status: 'confirmed' }, null, 2)}\n`);
    writeFileSync(at(other), `${JSON.stringify({ ...pending, id: other }, null, 2)}\n`);
    for (const id of [file, other]) utimesSync(at(id), past, past);
    await store.counts(['confirmed']); // settled
    const step = Math.floor(Date.now() / 1000); // a whole second: put back exactly below
    for (const id of [file, other]) utimesSync(at(id), step, step);
    await store.counts(['confirmed']); // both recorded again, racy
    // Rewritten in place in the same step: same size, same inode, the mtime put back.
    writeFileSync(at(file), readFileSync(at(file), 'utf8').replace('"confirmed"', '"rejected" '));
    utimesSync(at(file), step, step);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 5_000); // the racy entries are old enough to settle now
      const listed = async (status: string) => (await all(store.list({ status }))).map((entry) => (entry.kind === 'found' ? entry.stored.id : entry.kind));
      expect(await listed('confirmed')).toEqual([]); // and the index is written again (the other one settles)
      expect((await store.counts(['confirmed', 'rejected'])).counts).toMatchObject({ confirmed: 0, rejected: 1 });
      expect(await listed('rejected')).toEqual([file]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('sweeps the temp files of dead processes at recovery, and leaves a live process its own', async () => {
    const store = make();
    await seed(store);
    const dir = path.join(store.location, 'proposals');
    const dead = path.join(dir, `.x.json.999999999.abcd1234.tmp`);
    // Another live process's (this one's parent), and this process's own (its name ends with its suffix).
    const live = path.join(dir, `.y.json.${process.ppid}.abcd1234.tmp`);
    const own = path.join(dir, `.z.json.${process.pid}.7${processSuffix}.tmp`);
    const old = new Date(Date.now() - 60_000);
    for (const file of [dead, live, own]) {
      writeFileSync(file, '{');
      utimesSync(file, old, old);
    }
    await store.recover();
    expect(existsSync(dead), 'a single command does not pay for a sweep').toBe(true);
    await store.recover({ sweep: true });
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(own)).toBe(true);
  });

  it('takes over a claim whose owner was killed', async () => {
    const dir = tempDir('pipeline-store-');
    const script = `import { FileStore } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'store', 'file-store.js'))};
      const store = new FileStore({ dir: ${JSON.stringify(dir)}, ledgers: {} });
      const claimed = await store.claim('judge', { keys: [${JSON.stringify(ID)}] }, 1, 60000);
      process.stdout.write(claimed.leases.length ? 'held\\n' : 'not\\n');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    const store = make(dir);
    expect((await store.claim('judge', { keys: [ID] }, 1, 60_000)).leases).toEqual([]);
    expect(await store.held('judge', { keys: [ID] })).toEqual([ID]);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect((await store.claim('judge', { keys: [ID] }, 1, 60_000)).leases).toHaveLength(1);
  });
});

describe('file store: nothing outside the store, nothing that blocks', () => {
  it('reports a symlink, a directory or a FIFO named like a proposal, without following or blocking', async () => {
    const store = make();
    await seed(store);
    const dir = path.join(store.location, 'proposals');
    const outside = path.join(tempDir('pipeline-outside-'), 'secret.json');
    writeFileSync(outside, JSON.stringify({ ...pending, id: '01ARZ3NDEKTSV4RRFFQ69G5FA1', status: 'pending', secret: 'do not read' }));
    symlinkSync(outside, path.join(dir, '01ARZ3NDEKTSV4RRFFQ69G5FA1.json'));
    mkdirSync(path.join(dir, '01ARZ3NDEKTSV4RRFFQ69G5FA2.json'));
    spawnSync('mkfifo', [path.join(dir, '01ARZ3NDEKTSV4RRFFQ69G5FA3.json')]);
    expect(await store.read('01ARZ3NDEKTSV4RRFFQ69G5FA1')).toEqual({ kind: 'malformed', reason: 'a symbolic link, not a regular file' });
    expect(await store.read('01ARZ3NDEKTSV4RRFFQ69G5FA2')).toMatchObject({ kind: 'malformed', reason: expect.stringMatching(/directory/) });
    expect(await store.read('01ARZ3NDEKTSV4RRFFQ69G5FA3')).toMatchObject({ kind: 'malformed', reason: expect.stringMatching(/FIFO/) });
    const planted = ['01ARZ3NDEKTSV4RRFFQ69G5FA1', '01ARZ3NDEKTSV4RRFFQ69G5FA2', '01ARZ3NDEKTSV4RRFFQ69G5FA3'];
    // The first scan opens each file (none is indexed), the second looks again at those not indexed.
    for (let scan = 0; scan < 2; scan++) expect(await store.counts(['pending'])).toMatchObject({ counts: { pending: 1 }, malformed: planted });
    // An indexed proposal replaced by a link since: the index's own check (lstat) sees it too.
    const file = path.join(dir, `${ID}.json`);
    renameSync(file, outside);
    symlinkSync(outside, file);
    expect(await store.counts(['pending'])).toMatchObject({ counts: { pending: 0 }, malformed: [...planted, ID].sort() });
  });

  it('refuses a commit whose entry would go through a linked collection directory before writing anything', async () => {
    const store = make();
    const version = await seed(store);
    const outside = tempDir('pipeline-outside-');
    symlinkSync(outside, path.join(store.location, 'approved'));
    const change = approvedWithEntry(version);
    await expect(store.commit(change)).rejects.toThrow(/approved is a symbolic link, not a directory; the store does not read or write through it/);
    const read = await store.read(ID);
    expect(read.kind === 'found' && read.stored.version).toBe(version);
    expect(await all(store.audit({ id: ID }))).toEqual([created]);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses a directory moved out and linked back after the store has used it: no entry, proposal or claim written, nothing removed outside', async () => {
    const store = make();
    const version = await seed(store);
    // Every directory used once, as a run uses them before anyone swaps one.
    const approved = path.join(store.location, 'approved');
    mkdirSync(approved, { recursive: true });
    const claimed = await store.claim('judge', { keys: [ID] }, 1, 60_000);
    await store.release(claimed.leases);
    const outside = tempDir('pipeline-outside-');
    for (const dir of ['approved', '.claims']) {
      renameSync(path.join(store.location, dir), path.join(outside, dir));
      symlinkSync(path.join(outside, dir), path.join(store.location, dir));
    }
    // A file planted where a claim would go: taking it over would remove it.
    writeFileSync(path.join(outside, '.claims', 'judge', ID), 'precious');
    const change = approvedWithEntry(version);
    await expect(store.commit(change)).rejects.toThrow(/approved is a symbolic link, not a directory/);
    await expect(store.claim('judge', { keys: [ID] }, 1, 60_000)).rejects.toThrow(/\.claims is a symbolic link, not a directory/);
    expect(readdirSync(path.join(outside, 'approved'))).toEqual([]);
    expect(readFileSync(path.join(outside, '.claims', 'judge', ID), 'utf8')).toBe('precious');
    const read = await store.read(ID);
    expect(read.kind === 'found' && read.stored.version).toBe(version);
    // And the proposals' own directory: a commit refused, never a crash of the process.
    renameSync(path.join(store.location, 'proposals'), path.join(outside, 'proposals'));
    symlinkSync(path.join(outside, 'proposals'), path.join(store.location, 'proposals'));
    const before = readFileSync(path.join(outside, 'proposals', `${ID}.json`), 'utf8');
    await expect(store.commit({ ...change, entries: [] })).rejects.toThrow(/proposals is a symbolic link, not a directory/);
    expect(readFileSync(path.join(outside, 'proposals', `${ID}.json`), 'utf8')).toBe(before);
  });

  it('a claim released after its directory was swapped for a link to another removes nothing there (only its own link)', async () => {
    const store = make();
    await seed(store);
    const claimed = await store.claim('judge', { keys: [ID] }, 1, 60_000);
    expect(claimed.leases).toHaveLength(1);
    const outside = tempDir('pipeline-outside-');
    const claims = path.join(store.location, '.claims', 'judge');
    renameSync(claims, path.join(outside, 'moved'));
    mkdirSync(path.join(outside, 'decoy'));
    writeFileSync(path.join(outside, 'decoy', ID), 'precious');
    symlinkSync(path.join(outside, 'decoy'), claims);
    await store.release(claimed.leases);
    expect(readFileSync(path.join(outside, 'decoy', ID), 'utf8')).toBe('precious');
  });

  it('never blocks on a FIFO planted as a lock, a claim or an owner file: it is taken over like a dead holder’s', { timeout: 10_000 }, async () => {
    const store = make();
    const version = await seed(store);
    for (const dir of ['.locks', '.claims/judge', '.owners']) mkdirSync(path.join(store.location, dir), { recursive: true });
    spawnSync('mkfifo', [path.join(store.location, '.locks', `${ID}.lock`)]);
    spawnSync('mkfifo', [path.join(store.location, '.claims', 'judge', ID)]);
    spawnSync('mkfifo', [path.join(store.location, '.owners', 'host.1.x')]);
    const next = make(store.location);
    const { leases } = await next.claim('judge', { keys: [ID] }, 1, 60_000);
    expect(leases.map((lease) => lease.key)).toEqual([ID]);
    const result = await next.commit({
      id: ID,
      version,
      next: { ...pending, status: 'confirmed' },
      audit: [{ ...created, event: 'confirm', from: 'pending', to: 'confirmed' }],
      lease: leases[0]!,
    });
    expect(result.ok).toBe(true);
  });

  it('refuses at once a commit whose lock is a directory planted there, naming it, instead of waiting for it', async () => {
    const store = make();
    const version = await seed(store);
    mkdirSync(path.join(store.location, '.locks', `${ID}.lock`), { recursive: true });
    const started = Date.now();
    await expect(
      store.commit({ id: ID, version, next: { ...pending, status: 'confirmed' }, audit: [{ ...created, event: 'confirm', from: 'pending', to: 'confirmed' }] }),
    ).rejects.toThrow(`${ID}.lock is a directory, not a regular file`);
    expect(Date.now() - started).toBeLessThan(10_000);
    const read = await store.read(ID);
    expect(read.kind === 'found' && read.stored.version).toBe(version);
  }, 20_000);

  it('reports a proposal file whose id field names another proposal, and never counts, lists or queues it', async () => {
    const store = make();
    await seed(store);
    const other = '01ARZ3NDEKTSV4RRFFQ69G5FA4';
    const file = path.join(store.location, 'proposals', `${other}.json`);
    writeFileSync(file, `${JSON.stringify({ ...pending, status: 'confirmed' }, null, 2)}\n`); // id field: ID
    expect(await store.read(other)).toEqual({ kind: 'malformed', reason: `its id field is "${ID}", not the id it is stored under` });
    const { counts, malformed } = await store.counts(['pending', 'confirmed']);
    expect(counts).toEqual({ pending: 1, confirmed: 0 });
    expect(malformed).toEqual([other]);
    expect((await store.claim('judge', { query: { status: 'confirmed' } }, 10, 60_000)).leases).toEqual([]);
    // A file without an id field is read as it is (the id is its name).
    const { id: _id, ...noId } = pending;
    writeFileSync(file, `${JSON.stringify({ ...noId, status: 'confirmed' }, null, 2)}\n`);
    expect((await store.read(other)).kind).toBe('found');
  });

  it('refuses to append through a ledger or an audit log that is a symlink, and writes nothing outside', async () => {
    const store = make();
    const outside = path.join(tempDir('pipeline-outside-'), 'victim.jsonl');
    writeFileSync(outside, 'original\n');
    mkdirSync(store.location, { recursive: true });
    symlinkSync(outside, path.join(store.location, 'passed.jsonl'));
    symlinkSync(outside, path.join(store.location, 'events.jsonl'));
    await expect(store.appendLedger('passed', { id: ID })).rejects.toThrow(/passed\.jsonl is a symbolic link, not a regular file/);
    await expect(store.create({ proposal: pending, key: 'a', audit: created })).rejects.toThrow(/events\.jsonl is a symbolic link/);
    expect(readFileSync(outside, 'utf8')).toBe('original\n');
  });

  it('never reads or writes its index through a link put where .index belongs (a read-only command included)', async () => {
    const store = make();
    await seed(store);
    const outside = tempDir('pipeline-outside-');
    for (const name of ['proposals.tsv', 'audit.tsv']) writeFileSync(path.join(outside, name), 'precious\n');
    rmSync(path.join(store.location, '.index'), { recursive: true, force: true });
    symlinkSync(outside, path.join(store.location, '.index'));
    // Enough audit rows that the index of last rows is saved (it is saved every 2,000 rows read).
    const row = JSON.stringify({ ...created, event: 'note', from: 'pending' });
    appendFileSync(path.join(store.location, 'events.jsonl'), `${row}\n`.repeat(2001));
    // A dead process's key marker and an old temp file there, as a sweep would remove in the store's own.
    mkdirSync(path.join(outside, 'keys'));
    const marker = path.join(outside, 'keys', 'a.json');
    writeFileSync(marker, JSON.stringify({ id: '01ARZ3NDEKTSV4RRFFQ69G5FB9', key: 'a', host: os.hostname(), pid: deadPid(), start: 1, nonce: 'x' }));
    const temp = path.join(outside, 'keys', '.b.json.999999999.abcd12.tmp');
    writeFileSync(temp, '');
    utimesSync(temp, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    for (let pass = 0; pass < 2; pass++) {
      const reader = make(store.location);
      expect((await all(reader.index())).map((entry) => [entry.id, entry.status])).toEqual([[ID, 'pending']]);
      expect((await reader.lastAudit(ID))?.event).toBe('note');
      await reader.recover({ sweep: true });
      await expect(reader.keyHandled('a')).rejects.toThrow(/\.index is a symbolic link/);
    }
    expect(readdirSync(outside).sort()).toEqual(['audit.tsv', 'keys', 'proposals.tsv']);
    for (const name of ['proposals.tsv', 'audit.tsv']) expect(readFileSync(path.join(outside, name), 'utf8')).toBe('precious\n');
    expect(readdirSync(path.join(outside, 'keys')).sort()).toEqual(['.b.json.999999999.abcd12.tmp', 'a.json']);
  });

  it('answers "changed" to a commit whose proposal file became a link or grew past any proposal’s size since it was read', async () => {
    for (const swap of ['link', 'huge'] as const) {
      const store = make();
      const version = await seed(store);
      const file = path.join(store.location, 'proposals', `${ID}.json`);
      if (swap === 'link') {
        const outside = path.join(tempDir('pipeline-outside-'), 'p.json');
        writeFileSync(outside, readFileSync(file));
        unlinkSync(file);
        symlinkSync(outside, file);
      } else truncateSync(file, 16 * 1024 * 1024 + 1);
      const result = await store.commit({
        id: ID,
        version,
        next: { ...pending, status: 'confirmed' },
        audit: [{ ...created, event: 'confirm', from: 'pending', to: 'confirmed' }],
      });
      expect(result, swap).toEqual({ ok: false, reason: 'changed' });
    }
  });

  it('refuses a store whose proposals directory is a link out of it', async () => {
    const store = make();
    const outside = tempDir('pipeline-outside-');
    mkdirSync(store.location, { recursive: true });
    symlinkSync(outside, path.join(store.location, 'proposals'));
    await expect(seed(store)).rejects.toThrow(/proposals is a symbolic link/);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('never quotes the bytes of a file it cannot parse', async () => {
    const store = make();
    mkdirSync(path.join(store.location, 'proposals'), { recursive: true });
    writeFileSync(path.join(store.location, 'proposals', `${ID}.json`), 'root:x:0:0:root:/root:/bin/bash\n');
    const read = await store.read(ID);
    expect(read.kind).toBe('malformed');
    expect(read.kind === 'malformed' && read.reason).toMatch(/^not valid JSON/);
    expect(read.kind === 'malformed' && read.reason).not.toMatch(/root|bash/);
  });
});

/** Commit in a child process that kills itself right after `step` (PIPELINE_FAILPOINT). */
function crashAt(dir: string, step: string, version: string, extra: string): number {
  const script = `import { FileStore } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'store', 'file-store.js'))};
    const store = new FileStore({ dir: ${JSON.stringify(dir)}, ledgers: { passed: 'passed.jsonl' } });
    await store.commit({ id: ${JSON.stringify(ID)}, version: ${JSON.stringify(version)}, next: { ...${JSON.stringify(pending)}, status: 'passed' },
      audit: [{ at: '2026-11-01T00:00:01Z', id: ${JSON.stringify(ID)}, event: 'pass', from: 'pending', to: 'passed', stage: 'test', actor: 'cli' }],
      ${extra} });`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, PIPELINE_FAILPOINT: step }, encoding: 'utf8' });
  expect(result.signal, result.stderr).toBe('SIGKILL');
  return result.pid;
}

/** A commit computed from `version` is refused as stale: the interrupted one (to `passed`) landed first. */
async function expectFinishedFirst(store: FileStore, version: string): Promise<void> {
  const stale = {
    id: ID,
    version,
    next: { ...pending, status: 'confirmed' },
    audit: [{ ...created, event: 'confirm', from: 'pending', to: 'confirmed', at: '2026-11-01T00:00:02Z' }],
  };
  expect(await store.commit(stale)).toEqual({ ok: false, reason: 'changed' });
  const read = await store.read(ID);
  expect(read.kind === 'found' && read.stored.proposal['status']).toBe('passed');
}

describe('file store: the document is written while its intent is made durable', () => {
  const change = (version: string) => ({
    id: ID,
    version,
    next: { ...pending, status: 'confirmed' },
    audit: [{ ...created, event: 'confirm', from: 'pending', to: 'confirmed', at: '2026-11-01T00:00:02Z' }],
  });
  const temps = (dir: string) => readdirSync(path.join(dir, 'proposals')).filter((name) => name.endsWith('.tmp'));

  it('writes the temp file during the journal sync, and puts it in place only after', async () => {
    const store = make();
    const version = await seed(store);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    let release!: () => void;
    const seen: { temps: string[]; document: string }[] = [];
    const write = Journal.prototype.write;
    const spy = vi.spyOn(Journal.prototype, 'write').mockImplementation(async function (this: Journal, intent) {
      await write.call(this, intent);
      // The intent is durable, the commit not yet told so: the temp file is written (its write
      // started with the journal's), the proposal file still holds the old version.
      for (let i = 0; i < 200 && temps(store.location).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push({ temps: temps(store.location), document: readFileSync(file, 'utf8') });
      await new Promise<void>((resolve) => (release = resolve));
    });
    try {
      const committed = store.commit(change(version));
      while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(seen[0]!.temps).toHaveLength(1);
      expect(readFileSync(path.join(store.location, 'proposals', seen[0]!.temps[0]!), 'utf8')).toContain('"confirmed"');
      expect(seen[0]!.document).toBe(version);
      release();
      expect(await committed).toMatchObject({ ok: true });
      expect(readFileSync(file, 'utf8')).toContain('"confirmed"');
      expect(temps(store.location)).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });

  it('removes the temp file when the intent cannot be made durable, and changes nothing', async () => {
    const store = make();
    const version = await seed(store);
    const spy = vi.spyOn(Journal.prototype, 'write').mockImplementation(async function (this: Journal) {
      await new Promise((resolve) => setTimeout(resolve, 20)); // the temp file is written meanwhile
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    });
    try {
      await expect(store.commit(change(version))).rejects.toThrow(/no space left/);
    } finally {
      spy.mockRestore();
    }
    expect(temps(store.location)).toEqual([]);
    expect(readFileSync(path.join(store.location, 'proposals', `${ID}.json`), 'utf8')).toBe(version);
    expect((await all(store.audit({ id: ID }))).map((row) => row.event)).toEqual(['create']);
  });
});

describe('file store: a commit lands whole, whatever point a crash hits', () => {
  const ledger = `ledger: [{ ledger: 'passed', row: { id: ${JSON.stringify(ID)}, reason: null } }], entries: [{ op: 'put', collection: 'approved', id: ${JSON.stringify(ID)}, entry: { id: ${JSON.stringify(ID)} } }]`;

  for (const step of ['journaled', 'document', 'ledger']) {
    it(`finishes a commit killed after its ${step} step: once, before the next commit on it, marking the added audit row`, async () => {
      const store = make();
      const version = await seed(store);
      const killed = crashAt(store.location, step, version, ledger);
      const next = make(store.location);
      // The next writer finishes the interrupted commit first; its own (stale) commit is then refused.
      await expectFinishedFirst(next, version);
      expect(await all(next.ledger('passed'))).toEqual([{ id: ID, reason: null }]);
      expect(await next.readEntry('approved', ID)).toEqual({ id: ID });
      const rows = await all(next.audit({ id: ID }));
      expect(rows.map((row) => [row.event, row.repaired ?? false])).toEqual([
        ['create', false],
        ['pass', true],
      ]);
      expect(rows[1]!.repaired_at).toMatch(/Z$/);
      expect(readdirSync(path.join(store.location, '.journal')).filter((name) => name.includes(`.${killed}.`))).toEqual([]);
      expect(await next.recover()).toBe(0);
    });
  }

  // A process killed while it appends a row leaves the part of it before a page boundary: the
  // kernel copies a write into the page cache a page at a time and stops between pages once the
  // process is being killed (found by the kill-judge torture test, seen by hand on this VM).
  /** Whole lines that fill `file` up to `cut` bytes before a page boundary (a padding audit row of another proposal). */
  const PAD = '01ARZ3NDEKTSV4RRFFQ69G5FAX';
  const fillTo = (file: string, cut: number) => {
    const size = existsSync(file) ? statSync(file).size : 0;
    const bare = JSON.stringify({ ...created, id: PAD, args: { pad: '' } });
    const room = 4096 - cut - size - bare.length - 1;
    expect(room).toBeGreaterThan(0);
    appendFileSync(file, `${JSON.stringify({ ...created, id: PAD, args: { pad: 'x'.repeat(room) } })}\n`);
    expect((statSync(file).size + cut) % 4096).toBe(0);
  };
  const passRow = `${JSON.stringify({ at: '2026-11-01T00:00:01Z', id: ID, event: 'pass', from: 'pending', to: 'passed', stage: 'test', actor: 'cli' })}\n`;

  const ledgerRow = `${JSON.stringify({ id: ID, reason: null })}\n`;
  /**
   * A commit killed before its ledger row, and then `half` at the end of the ledger, which ends
   * `cut` bytes after its last whole line (a page boundary when `half` is that long). The next
   * store finishes the commit; returns the ledger's text before and after that.
   */
  const halfLedgerRow = async (cut: number, half: string) => {
    const store = make();
    const version = await seed(store);
    const file = path.join(store.location, 'passed.jsonl');
    fillTo(file, cut);
    crashAt(store.location, 'document', version, ledger);
    appendFileSync(file, half);
    const before = readFileSync(file, 'utf8');
    await expectFinishedFirst(make(store.location), version);
    return { before, after: readFileSync(file, 'utf8') };
  };

  it('finishes a ledger row its killed writer cut at a page boundary, instead of leaving half of it beside a second one', async () => {
    const { before, after } = await halfLedgerRow(10, ledgerRow.slice(0, 10)); // as a kill inside that row's write leaves it
    expect(after).toBe(before.slice(0, -10) + ledgerRow);
  });

  it('finishes an audit row its killed writer cut at a page boundary: the row as its commit wrote it', async () => {
    const store = make();
    const version = await seed(store);
    const file = path.join(store.location, 'events.jsonl');
    fillTo(file, 25);
    const before = readFileSync(file, 'utf8');
    crashAt(store.location, 'ledger', version, ledger); // killed before its audit row
    appendFileSync(file, passRow.slice(0, 25));
    const next = make(store.location);
    await expectFinishedFirst(next, version);
    expect(readFileSync(file, 'utf8')).toBe(before + passRow);
    expect((await all(next.audit({ id: ID }))).map((row) => [row.event, row.repaired ?? false])).toEqual([
      ['create', false],
      ['pass', false],
    ]);
  });

  it('leaves a half line that no killed write of this commit explains, and writes the row whole after it', async () => {
    // Cut one byte short of a page boundary (a power cut, say): not this commit's killed write.
    const shortOfPage = await halfLedgerRow(11, ledgerRow.slice(0, 10));
    expect(shortOfPage.after).toBe(`${shortOfPage.before}\n${ledgerRow}`);
    // At a page boundary, but not the start of this row (another row's): the same.
    const another = await halfLedgerRow(10, '{"id":"01B');
    expect(another.after).toBe(`${another.before}\n${ledgerRow}`);
  });

  it('starts every row on a fresh line, also when a writer was killed halfway through its own after this process last appended', async () => {
    const store = make();
    const file = path.join(store.location, 'passed.jsonl');
    await store.appendLedger('passed', { id: 'a' });
    appendFileSync(file, '{"id":"ha'); // another process, killed inside its write
    await store.appendLedger('passed', { id: 'b' });
    expect(readFileSync(file, 'utf8')).toBe('{"id":"a"}\n{"id":"ha\n{"id":"b"}\n');
  });

  it('finds the journal of a process that died after this store last listed the journals (the listing is reused only while the directory is unchanged)', async () => {
    const store = make();
    const version = await seed(store);
    // The journal directory settled long ago (by this clock), and this store has just listed it: a listing it reuses.
    await withClockAt(Date.now() + 60_000, async () => {
      const reused = journalListings.reused;
      expect([await store.recover(), await store.recover(), journalListings.reused - reused]).toEqual([0, 0, 1]);
      crashAt(store.location, 'journaled', version, ledger);
      // As when a commit failed halfway and its process died later: no stale lock points at the journal.
      unlinkSync(path.join(store.location, '.locks', `${ID}.lock`));
      // The engine asks the store to recover before each commit; the listing it reuses must not hide the new journal.
      expect(await store.recover()).toBe(1);
    });
    await expectFinishedFirst(store, version);
  });

  it('reuses a listing of the journals once the directory has been unchanged for 100 ms on a local file system, and for 2 s elsewhere', async () => {
    const listings = async (store: FileStore, rounds: number) => {
      const before = { ...journalListings };
      for (let round = 0; round < rounds; round++) await store.recover();
      return [journalListings.listed - before.listed, journalListings.reused - before.reused];
    };
    const local = make();
    await seed(local);
    let now = Date.now();
    await withClockAt(now + 150, async () => expect(await listings(local, 3)).toEqual([1, 2]));
    // Changed just now: listed on every call until it has settled.
    utimesSync(path.join(local.location, '.journal'), new Date(now), new Date(now));
    now = Date.now();
    await withClockAt(now + 50, async () => expect(await listings(local, 3)).toEqual([3, 0]));
    const other = make();
    await seed(other);
    now = Date.now();
    const notLocal = vi.spyOn(localFileSystem, 'test').mockReturnValue(false);
    try {
      await withClockAt(now + 150, async () => expect(await listings(other, 3)).toEqual([3, 0]));
      await withClockAt(now + 2500, async () => expect(await listings(other, 3)).toEqual([1, 2]));
    } finally {
      notLocal.mockRestore();
    }
  });

  it('leaves a commit killed after its audit row as it is (it was complete), and a run start finds nothing to do', async () => {
    const store = make();
    const version = await seed(store);
    crashAt(store.location, 'audit', version, ledger);
    const next = make(store.location);
    expect(await next.recover()).toBe(0);
    expect((await all(next.audit({ id: ID }))).map((row) => row.repaired ?? false)).toEqual([false, false]);
    expect(await all(next.ledger('passed'))).toHaveLength(1);
  });

  it('never overwrites a proposal file made unreadable by hand since the crash, and invents nothing for it', async () => {
    const store = make();
    const version = await seed(store);
    crashAt(store.location, 'journaled', version, ledger);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    writeFileSync(file, '{"id": "trunc');
    const next = make(store.location);
    expect(await next.recover()).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('{"id": "trunc');
    expect((await all(next.audit({ id: ID }))).map((row) => row.event)).toEqual(['create']);
    expect(await all(next.ledger('passed'))).toEqual([]);
  });

  it('skips journal lines that are not intents, and journals that are not files, without stopping any write', async () => {
    const store = make();
    const version = await seed(store);
    const journal = path.join(store.location, '.journal');
    mkdirSync(journal, { recursive: true });
    // Each line would otherwise be replayed: it starts from the proposal as it is now.
    const confirmed = { ...created, event: 'confirm', from: 'pending', to: 'confirmed' };
    const intent = {
      kind: 'commit',
      id: ID,
      prev: createHash('sha256').update(version).digest('hex'),
      next: `${JSON.stringify({ ...pending, status: 'confirmed' }, null, 2)}\n`,
      audit: [confirmed],
      ledger: [],
      entries: [],
      offsets: {},
    };
    const OTHER = '01ARZ3NDEKTSV4RRFFQ69G5FAW';
    const planted = [
      { ...intent, offsets: undefined },
      { ...intent, ledger: [{ ledger: 'nope', row: {} }] },
      { ...intent, entries: [{ op: 'put', collection: '../x', id: ID, text: '{}' }] },
      { ...intent, audit: [] },
      // A line may act only on the proposal it names, with a document of it at its audit row's state.
      { ...intent, audit: [{ ...confirmed, id: OTHER }] },
      { ...intent, entries: [{ op: 'put', collection: 'approved', id: OTHER, text: '{}' }] },
      { ...intent, next: `${JSON.stringify({ ...pending, id: OTHER, status: 'confirmed' })}\n` },
      { ...intent, next: `${JSON.stringify({ ...pending, status: 'rejected' })}\n` },
      { ...intent, next: '{}\n' },
      { ...intent, ledger: [{ ledger: 'events', row: { ...confirmed, event: 'approve' } }] },
    ];
    planted.forEach((line, i) => writeFileSync(path.join(journal, `host.${i + 1}.a.jsonl`), `${JSON.stringify(line)}\nnot json {\n`));
    mkdirSync(path.join(journal, 'host.8.b.jsonl'));
    const outside = path.join(tempDir('pipeline-outside-'), 'journal.jsonl');
    writeFileSync(outside, `${JSON.stringify(intent)}\n`);
    symlinkSync(outside, path.join(journal, 'host.9.c.jsonl'));
    const next = make(store.location);
    const result = await next.commit({
      id: ID,
      version,
      next: { ...pending, status: 'confirmed' },
      audit: [{ ...created, event: 'confirm', from: 'pending', to: 'confirmed' }],
    });
    expect(result.ok).toBe(true);
    expect((await all(next.audit({ id: ID }))).map((row) => row.event)).toEqual(['create', 'confirm']);
    expect(readFileSync(outside, 'utf8')).toBe(`${JSON.stringify(intent)}\n`);
  });

  it('replays at the start of a run what a killed process left, and invents nothing for a file changed by hand since', async () => {
    const store = make();
    const version = await seed(store);
    crashAt(store.location, 'journaled', version, ledger);
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    writeFileSync(file, `${JSON.stringify({ ...pending, note: 'edited by hand' }, null, 2)}\n`);
    const next = make(store.location);
    expect(await next.recover()).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8')).note).toBe('edited by hand');
    expect((await all(next.audit({ id: ID }))).map((row) => row.event)).toEqual(['create']);
  });
});

describe('file store: a creation killed after its intent was journaled', () => {
  it('is finished before its source key is looked up: the key is taken, never proposed twice', async () => {
    const dir = tempDir('pipeline-store-');
    const script = `import { FileStore } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'store', 'file-store.js'))};
      const store = new FileStore({ dir: ${JSON.stringify(dir)}, ledgers: {} });
      await store.create({ proposal: ${JSON.stringify(pending)}, key: 'a', audit: ${JSON.stringify(created)} });`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, PIPELINE_FAILPOINT: 'journaled' },
      encoding: 'utf8',
    });
    expect(result.signal, result.stderr).toBe('SIGKILL');
    const next = make(dir);
    expect(await next.keyHandled('a')).toEqual({ by: 'proposal', id: ID });
    expect((await next.read(ID)).kind).toBe('found');
    const again = await next.create({
      proposal: { ...pending, id: '01ARZ3NDEKTSV4RRFFQ69G5FA9' },
      key: 'a',
      audit: { ...created, id: '01ARZ3NDEKTSV4RRFFQ69G5FA9' },
    });
    expect(again).toEqual({ ok: false, reason: 'key_exists', existing: ID });
    expect(await all(next.audit())).toHaveLength(1);
  });
});

describe('file store: the commit journal', () => {
  const intent = { kind: 'commit' as const, id: ID, prev: 'x', next: '{}\n', audit: [created], ledger: [], entries: [], offsets: {} };

  it('is removed at a clean exit once every commit in it was applied', async () => {
    const journal = new Journal(tempDir('pipeline-journal-'), 'owner');
    await journal.write(intent);
    journal.done();
    journal.closeAtExit();
    expect(existsSync(journal.file)).toBe(false);
  });

  it('outlives the process when a commit failed halfway, so the next writer replays it', async () => {
    const journal = new Journal(tempDir('pipeline-journal-'), 'owner');
    await journal.write(intent);
    journal.done(false);
    await journal.write({ ...intent, prev: 'y' });
    journal.done();
    journal.closeAtExit();
    expect(readFileSync(journal.file, 'utf8').trim().split('\n')).toHaveLength(2);
  });
});

describe('file store: the status index, read and written a chunk at a time', () => {
  const crockford = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const ids = Array.from({ length: 40 }, (_, i) => `01ARZ3NDEKTSV4RRFFQ69G5F${crockford[i >> 5]}${crockford[i & 31]}`);
  // Statuses in other alphabets: bytes over 127, some of them cut in two by a chunk's end.
  const statuses = ['pending', 'bestätigt', '確認済み', 'passed', 'одобрено'];
  const counted = async (store: FileStore) => (await store.counts(statuses)).counts;
  const body = (store: FileStore) =>
    readFileSync(path.join(store.location, '.index', 'proposals.tsv'), 'utf8')
      .split('\n')
      .slice(1)
      .join('\n');
  const inode = (store: FileStore) => lstatSync(path.join(store.location, '.index', 'proposals.tsv')).ino;

  for (const [chunk, fresh] of [
    [1, 1 << 20],
    [7, 100],
    [1 << 16, 300],
  ] as const)
    it(`keeps the same index whatever the chunk (${chunk} bytes) and wherever new lines wait (${fresh} bytes in memory): unchanged lines copied byte for byte, new ones written, none lost`, async () => {
      setCacheChunk(chunk, fresh);
      try {
        const store = make();
        const dir = path.join(store.location, 'proposals');
        mkdirSync(dir, { recursive: true });
        const write = (id: string, status: string) => writeFileSync(path.join(dir, `${id}.json`), `${JSON.stringify({ ...pending, id, status }, null, 2)}\n`);
        ids.forEach((id, i) => write(id, statuses[i % statuses.length]!));
        await withClockAt(Date.now() + 5000, async () => {
          expect(await counted(store)).toEqual({ pending: 8, bestätigt: 8, 確認済み: 8, passed: 8, одобрено: 8 });
          const built = inode(store);
          // Read back, every status as it was written, and nothing to rewrite.
          expect(await counted(store)).toEqual({ pending: 8, bestätigt: 8, 確認済み: 8, passed: 8, одобрено: 8 });
          expect(inode(store)).toBe(built);
          // Changed in the middle, at both ends, one removed, one added: the scan rewrites the
          // index, copying the lines between, and it is the index a scan from nothing builds.
          write(ids[0]!, '確認済み');
          write(ids[17]!, 'pending');
          write(ids[39]!, 'bestätigt');
          rmSync(path.join(dir, `${ids[25]}.json`));
          write('01ARZ3NDEKTSV4RRFFQ69G5FZZ', 'одобрено');
          const now = { pending: 7, bestätigt: 9, 確認済み: 8, passed: 8, одобрено: 8 };
          expect(await counted(store)).toEqual(now);
          const rewritten = body(store);
          expect(rewritten.split('\n')).toHaveLength(41); // 40 lines and the newline after the last
          rmSync(path.join(store.location, '.index', 'proposals.tsv'));
          expect(await counted(store)).toEqual(now);
          expect(body(store)).toBe(rewritten);
          // One change in the middle: the lines before it are copied as one run.
          write(ids[30]!, 'passed');
          const later = { ...now, pending: 6, passed: 9 };
          expect(await counted(store)).toEqual(later);
          const again = body(store);
          rmSync(path.join(store.location, '.index', 'proposals.tsv'));
          expect(await counted(store)).toEqual(later);
          expect(body(store)).toBe(again);
          // Nothing left beside the index (new lines past the memory kept in a file meanwhile).
          expect(readdirSync(path.join(store.location, '.index')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
          const listed = (await all(store.list({ status: 'одобрено' }))).map((entry) => (entry.kind === 'found' ? entry.stored.id : entry.kind));
          expect(listed).toEqual([ids[4], ids[9], ids[14], ids[19], ids[24], ids[29], ids[34], '01ARZ3NDEKTSV4RRFFQ69G5FZZ']);
        });
      } finally {
        setCacheChunk();
      }
    });

  it('lists a directory larger than its first batches, in id order, leaving out what is not a proposal', async () => {
    const store = make();
    const dir = path.join(store.location, 'proposals');
    mkdirSync(dir, { recursive: true });
    const many = Array.from(
      { length: 1100 },
      (_, i) => `01ARZ3NDEKTSV4RRFFQ6${crockford[(i * 7) % 32]}${crockford[i >> 10]}${crockford[(i >> 5) & 31]}${crockford[i & 31]}ZZ`,
    );
    for (const id of [...many].reverse()) writeFileSync(path.join(dir, `${id}.json`), `${JSON.stringify({ ...pending, id }, null, 2)}\n`);
    writeFileSync(path.join(dir, `.${many[0]}.json.1.a.tmp`), '{');
    writeFileSync(path.join(dir, 'notes.txt'), '');
    expect((await all(store.index())).map((entry) => entry.id)).toEqual([...many].sort());
  });

  it('still answers when new lines cannot wait in a file (no room for one: the index is not written)', async () => {
    setCacheChunk(7, 100);
    try {
      const store = make();
      const dir = path.join(store.location, 'proposals');
      mkdirSync(dir, { recursive: true });
      for (const id of ids) writeFileSync(path.join(dir, `${id}.json`), `${JSON.stringify({ ...pending, id }, null, 2)}\n`);
      writeFileSync(path.join(store.location, '.index'), 'not a directory');
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 40 });
      expect(readFileSync(path.join(store.location, '.index'), 'utf8')).toBe('not a directory');
    } finally {
      setCacheChunk();
    }
  });

  it('keeps a status of thousands of characters cut in its line, and reads a line far longer than a chunk in the time it takes to read it', async () => {
    setCacheChunk(7);
    try {
      const store = make();
      const dir = path.join(store.location, 'proposals');
      mkdirSync(dir, { recursive: true });
      const long = 'x'.repeat(300_000);
      writeFileSync(path.join(dir, `${ID}.json`), `${JSON.stringify({ ...pending, status: long }, null, 2)}\n`);
      const cut = `${'x'.repeat(1024)}…`;
      await withClockAt(Date.now() + 5000, async () => {
        expect((await store.counts([])).unknown).toEqual({ [cut]: 1 });
        const before = scanReads.count;
        expect((await store.counts([])).unknown).toEqual({ [cut]: 1 }); // from the index, 150-odd chunks
        expect(scanReads.count - before).toBe(0);
        // (A status of 16 MB in a line made every later line of the cache unreadable: each scan read every file.)
        expect(
          Math.max(
            ...readFileSync(path.join(store.location, '.index', 'proposals.tsv'), 'utf8')
              .split('\n')
              .map((line) => line.length),
          ),
        ).toBeLessThan(2048);
      });
    } finally {
      setCacheChunk();
    }
  }, 10_000);

  it('takes a count in the header that its lines could not hold for a lie: the directory is listed, nothing is allocated for it', async () => {
    const store = make();
    await seed(store);
    const cache = path.join(store.location, '.index', 'proposals.tsv');
    await withClockAt(Date.now() + 5000, async () => {
      await store.counts(['pending']);
      const [header, ...rest] = readFileSync(cache, 'utf8').split('\n');
      expect(header!.split('\t')).toHaveLength(5);
      for (const count of ['999999999', '2']) {
        writeFileSync(cache, [header!.replace(/\t1$/, `\t${count}`), ...rest].join('\n'));
        const skipped = directoryListingsSkipped.count;
        expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
        expect(directoryListingsSkipped.count - skipped).toBe(0);
      }
    });
  });

  it('takes a cache that runs on without a newline (damaged, or a hole in the file) as ending there', async () => {
    const store = make();
    await seed(store);
    const cache = path.join(store.location, '.index', 'proposals.tsv');
    await withClockAt(Date.now() + 5000, async () => {
      await store.counts(['pending']);
      const [header] = readFileSync(cache, 'utf8').split('\n');
      // The header and no lines, then 20 MB of nothing (a sparse file: no disk used).
      writeFileSync(cache, `${header!.replace(/\t1$/, '\t0')}\n`);
      truncateSync(cache, 20 * 1024 * 1024);
      const before = scanReads.count;
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
      expect(scanReads.count - before).toBe(1); // read from its file
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
      expect(statSync(cache).size).toBeLessThan(1000); // and the index written again
      // A good index with a hole after its last line: written again too, not read on every scan.
      const good = readFileSync(cache, 'utf8');
      writeFileSync(cache, good);
      truncateSync(cache, 20 * 1024 * 1024);
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
      expect(readFileSync(cache, 'utf8')).toBe(good); // the same scan time: the clock stands still
    });
  });
});

describe('file store: a claim pass right after a listing takes its queue from it', () => {
  const ids = ['01ARZ3NDEKTSV4RRFFQ69G5FB1', '01ARZ3NDEKTSV4RRFFQ69G5FB2', '01ARZ3NDEKTSV4RRFFQ69G5FB3', '01ARZ3NDEKTSV4RRFFQ69G5FB4'];
  const confirmed = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    artifact_id: id,
    created_at: '2026-11-01T00:00:00Z',
    status: 'confirmed',
    ...extra,
  });
  const createdAs = (id: string, to: string): AuditRow => ({ ...created, id, to });

  async function storeOf(count: number): Promise<FileStore> {
    const store = make();
    for (const id of ids.slice(0, count))
      expect(await store.create({ proposal: confirmed(id), key: id, audit: createdAs(id, 'confirmed') })).toMatchObject({ ok: true });
    return store;
  }
  const queued = async (store: Store, query: { status: string | string[]; without?: string }) =>
    (await store.claim('judge', { query }, 10, 60_000)).leases.map((lease) => lease.key);
  /** A proposal file put in place by hand: no audit row, as an import or an editor would. */
  const dropIn = (store: FileStore, id: string) =>
    writeFileSync(path.join(store.location, 'proposals', `${id}.json`), `${JSON.stringify(confirmed(id), null, 2)}\n`);

  it('lists the store once for a selection and the pass that follows it', async () => {
    const store = await storeOf(2);
    expect((await all(store.index({ status: 'confirmed' }))).map((entry) => entry.id)).toEqual(ids.slice(0, 2));
    // Appeared after the selection, with nothing committed: the run's queue is its selection.
    dropIn(store, ids[2]!);
    expect(await queued(store, { status: 'confirmed' })).toEqual(ids.slice(0, 2));
  });

  it('lists again once anything was committed since, by another handle or by this one', async () => {
    const store = await storeOf(2);
    await all(store.index({ status: 'confirmed' }));
    const other = make(store.location);
    expect(await other.create({ proposal: confirmed(ids[2]!), key: ids[2]!, audit: createdAs(ids[2]!, 'confirmed') })).toMatchObject({ ok: true });
    expect(await queued(store, { status: 'confirmed' })).toEqual(ids.slice(0, 3));

    const again = await storeOf(2);
    await all(again.index({ status: 'confirmed' }));
    expect(await again.create({ proposal: confirmed(ids[2]!), key: ids[2]!, audit: createdAs(ids[2]!, 'confirmed') })).toMatchObject({ ok: true });
    expect(await queued(again, { status: 'confirmed' })).toEqual(ids.slice(0, 3));

    // A commit of this handle's still under way (its audit row not yet written) counts too.
    const busy = await storeOf(2);
    await all(busy.index({ status: 'confirmed' }));
    dropIn(busy, ids[2]!);
    const creating = busy.create({ proposal: confirmed(ids[3]!), key: ids[3]!, audit: createdAs(ids[3]!, 'confirmed') });
    expect(await queued(busy, { status: 'confirmed' })).toEqual(expect.arrayContaining(ids.slice(0, 3)));
    expect(await creating).toMatchObject({ ok: true });
  });

  it('takes the audit log and its own writes as they were before the listing began', async () => {
    // Another handle's commit while the listing is read: the listing may not hold what it did.
    const store = await storeOf(2);
    const other = make(store.location);
    for await (const entry of store.index({ status: 'confirmed' })) {
      if (entry.id !== ids[0]) continue;
      expect(await other.create({ proposal: confirmed(ids[2]!), key: ids[2]!, audit: createdAs(ids[2]!, 'confirmed') })).toMatchObject({ ok: true });
      dropIn(store, ids[3]!);
    }
    expect(await queued(store, { status: 'confirmed' })).toEqual(ids);

    // This handle's own commit begun while the listing is read, its audit row not yet written.
    const busy = await storeOf(2);
    let creating: Promise<unknown> | undefined;
    for await (const entry of busy.index({ status: 'confirmed' })) {
      if (entry.id !== ids[0]) continue;
      creating = busy.create({ proposal: confirmed(ids[2]!), key: ids[2]!, audit: createdAs(ids[2]!, 'confirmed') });
      dropIn(busy, ids[3]!);
    }
    expect(await queued(busy, { status: 'confirmed' })).toEqual(expect.arrayContaining([ids[0], ids[1], ids[3]]));
    expect(await creating).toMatchObject({ ok: true });

    // One begun before the listing and still running when the pass starts (held before it writes
    // anything): the listing is not kept at all, so the pass lists again.
    const early = await storeOf(2);
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = early as unknown as { apply: (...args: unknown[]) => Promise<unknown> };
    const apply = held.apply.bind(early);
    held.apply = async (...args: unknown[]) => {
      await gate;
      return apply(...args);
    };
    const started = early.create({ proposal: confirmed(ids[2]!), key: ids[2]!, audit: createdAs(ids[2]!, 'confirmed') });
    await all(early.index({ status: 'confirmed' }));
    dropIn(early, ids[3]!);
    expect(await queued(early, { status: 'confirmed' })).toEqual([ids[0], ids[1], ids[3]]);
    release();
    expect(await started).toMatchObject({ ok: true });
  });

  it('lists again after a load (a copy writes proposals with no audit row), and after the store is closed', async () => {
    const target = make();
    expect(await all(target.index({ status: 'confirmed' }))).toEqual([]);
    async function* copied() {
      yield { kind: 'proposal' as const, id: ids[0]!, key: ids[0]!, text: `${JSON.stringify(confirmed(ids[0]!), null, 2)}\n` };
    }
    await target.load(copied());
    expect(await queued(target, { status: 'confirmed' })).toEqual([ids[0]]);

    const closed = await storeOf(2);
    await all(closed.index({ status: 'confirmed' }));
    await closed.close();
    dropIn(closed, ids[2]!);
    expect(await queued(closed, { status: 'confirmed' })).toEqual(ids.slice(0, 3));
  });

  it('still throws nothing at the call when the store cannot be looked at (the listing says why when read)', async () => {
    const file = path.join(tempDir('pipeline-store-'), 'not-a-directory');
    writeFileSync(file, '');
    const store = make(file);
    const listing = store.index({ status: 'confirmed' });
    await expect(all(listing)).rejects.toThrow(/ENOTDIR/);
  });

  it("lists again after a dead run's journal was replayed, whether the replay finished or stopped partway", async () => {
    // Finished: the commit the dead run journaled (pending → passed) lands, audit row and all.
    const done = make();
    const doneVersion = await seed(done);
    crashAt(done.location, 'journaled', doneVersion, '');
    const afterDone = make(done.location);
    expect(await all(afterDone.index({ status: 'passed' }))).toEqual([]);
    expect(await afterDone.recover({ sweep: true })).toBe(1);
    expect(await queued(afterDone, { status: 'passed' })).toEqual([ID]);

    // Stopped partway: the document goes into place, then the pool entry it moves cannot be moved
    // (a file put where it goes), so no audit row is written and the journal stays.
    const stuck = make();
    const stuckVersion = await seed(stuck);
    mkdirSync(path.join(stuck.location, 'approved'));
    writeFileSync(path.join(stuck.location, 'approved', `${ID}.json`), '{"entry":1}\n');
    const killed = crashAt(stuck.location, 'journaled', stuckVersion, `entries: [{ op: 'move', from: 'approved', to: 'archived', id: ${JSON.stringify(ID)} }]`);
    mkdirSync(path.join(stuck.location, 'archived'), { recursive: true });
    writeFileSync(path.join(stuck.location, 'archived', `${ID}.json`), '{"entry":2}\n');
    const afterStuck = make(stuck.location);
    expect(await all(afterStuck.index({ status: 'passed' }))).toEqual([]);
    const auditBefore = readFileSync(path.join(stuck.location, 'events.jsonl'), 'utf8');
    await afterStuck.recover({ sweep: true });
    expect(readFileSync(path.join(stuck.location, 'events.jsonl'), 'utf8')).toBe(auditBefore);
    expect(readdirSync(path.join(stuck.location, '.journal')).filter((name) => name.includes(`.${killed}.`))).toHaveLength(1);
    expect(await queued(afterStuck, { status: 'passed' })).toEqual([ID]);
  });

  it('takes a listing once, only when it was read to its end, and only for the same proposals', async () => {
    const store = await storeOf(2);
    await all(store.index({ status: 'confirmed' }));
    expect(await queued(store, { status: 'confirmed' })).toEqual(ids.slice(0, 2));
    await store.release(ids.slice(0, 2).map((key) => ({ stage: 'judge', key, token: '' })));
    dropIn(store, ids[2]!);
    expect(await queued(store, { status: 'confirmed' })).toEqual(ids.slice(0, 3)); // the next pass lists

    const cut = await storeOf(2);
    for await (const entry of cut.index({ status: 'confirmed' })) if (entry.id === ids[0]) break;
    dropIn(cut, ids[2]!);
    expect(await queued(cut, { status: 'confirmed' })).toEqual(ids.slice(0, 3));

    const other = await storeOf(2);
    await all(other.index({ status: 'pending' }));
    dropIn(other, ids[2]!);
    expect(await queued(other, { status: 'confirmed' })).toEqual(ids.slice(0, 3));

    // Longer than a listing is kept for (200,000 ids; here 1): listed again.
    const long = await storeOf(2);
    setListingMax(1);
    try {
      await all(long.index({ status: 'confirmed' }));
    } finally {
      setListingMax();
    }
    dropIn(long, ids[2]!);
    expect(await queued(long, { status: 'confirmed' })).toEqual(ids.slice(0, 3));

    // The same statuses, however they are written.
    const same = await storeOf(2);
    await all(same.index({ status: ['passed', 'confirmed', 'confirmed'] }));
    dropIn(same, ids[2]!);
    expect(await queued(same, { status: ['confirmed', 'passed'] })).toEqual(ids.slice(0, 2));
  });

  it('leaves out marked proposals a listing of all of them held, never the other way round', async () => {
    const store = await storeOf(1);
    const id = ids[1]!;
    expect(await store.create({ proposal: confirmed(id, { promoted_at: '2026-11-02T00:00:00Z' }), key: id, audit: createdAs(id, 'confirmed') })).toMatchObject({
      ok: true,
    });
    await all(store.index({ status: 'confirmed' }));
    dropIn(store, ids[2]!); // not in the listing: a pass that listed again would take it
    expect(await queued(store, { status: 'confirmed', without: 'promoted_at' })).toEqual([ids[0]]);

    const other = await storeOf(1);
    expect(await other.create({ proposal: confirmed(id, { promoted_at: '2026-11-02T00:00:00Z' }), key: id, audit: createdAs(id, 'confirmed') })).toMatchObject({
      ok: true,
    });
    await all(other.index({ status: 'confirmed', without: 'promoted_at' }));
    expect(await queued(other, { status: 'confirmed' })).toEqual(ids.slice(0, 2));
  });
});
