/** The file store: the shared contract, plus what only a file store can get wrong. */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileStore } from '../../engine/store/file-store.js';
import type { Store } from '../../engine/store/types.js';
import { ROOT, tempDir } from '../helpers.js';
import { storeContract } from './contract.js';

const ledgers = { declined: 'declined.jsonl', passed: 'passed.jsonl' };
const make = (dir = tempDir('pipeline-store-')) => new FileStore({ dir, ledgers, marks: ['promoted_at'] });

storeContract('file store', {
  make: async () => make(),
  reopen: async (store) => make(store.location),
  corrupt: async (store, id, text) => {
    mkdirSync(path.join(store.location, 'proposals'), { recursive: true });
    writeFileSync(path.join(store.location, 'proposals', `${id}.json`), text);
  },
});

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const audit = { at: '2026-11-01T00:00:00Z', id: ID, event: 'create', from: null, to: 'pending', stage: 'test', actor: 'cli' as const };

async function seed(store: Store) {
  const created = await store.create({ id: ID, artifact_id: 'a', created_at: '2026-11-01T00:00:00Z', status: 'pending' }, 'a', audit);
  return created.ok ? created.version : '';
}

describe('file store', () => {
  it('writes pretty-printed JSON with a trailing newline and leaves no temp file', async () => {
    const store = make();
    await seed(store);
    const text = readFileSync(path.join(store.location, 'proposals', `${ID}.json`), 'utf8');
    expect(text).toBe(`${JSON.stringify({ id: ID, artifact_id: 'a', created_at: '2026-11-01T00:00:00Z', status: 'pending' }, null, 2)}\n`);
    expect(readdirSync(path.join(store.location, 'proposals'))).toEqual([`${ID}.json`]);
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
    await store.appendLedger('declined', { n: 3 });
    expect(await store.readLedger('declined')).toEqual([{ n: 1 }, { n: 3 }]);
  });

  it('sees a proposal edited by hand in place (the status index is validated, not trusted)', async () => {
    const store = make();
    await seed(store);
    expect((await store.counts(['pending', 'confirmed'])).counts).toEqual({ pending: 1, confirmed: 0 });
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    writeFileSync(file, readFileSync(file, 'utf8').replace('"pending"', '"confirmed"'));
    expect((await store.counts(['pending', 'confirmed'])).counts).toEqual({ pending: 0, confirmed: 1 });
    expect((await store.ids('confirmed')).ids).toEqual([ID]);
  });

  it('works again after its caches are deleted', async () => {
    const store = make();
    await seed(store);
    await store.counts(['pending']);
    const { rmSync } = await import('node:fs');
    rmSync(path.join(store.location, '.index', 'proposals.tsv'), { force: true });
    expect((await store.counts(['pending'])).counts).toEqual({ pending: 1 });
  });

  it('sweeps the temp files of dead processes, and leaves a live process its own', async () => {
    const store = make();
    await seed(store);
    const dir = path.join(store.location, 'proposals');
    const dead = path.join(dir, `.x.json.999999999.abcd1234.tmp`);
    const live = path.join(dir, `.y.json.${process.pid}.abcd1234.tmp`);
    writeFileSync(dead, '{');
    writeFileSync(live, '{');
    const { utimesSync } = await import('node:fs');
    const old = new Date(Date.now() - 60_000);
    utimesSync(dead, old, old);
    utimesSync(live, old, old);
    expect(await store.sweep()).toBe(1);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });

  it('takes over a claim whose owner was killed', async () => {
    const dir = tempDir('pipeline-store-');
    const script = `import { FileStore } from ${JSON.stringify(path.join(ROOT, 'dist', 'engine', 'store', 'file-store.js'))};
      const store = new FileStore({ dir: ${JSON.stringify(dir)}, ledgers: {} });
      const claim = await store.claim('judge', ${JSON.stringify(ID)});
      process.stdout.write(claim ? 'held\\n' : 'not\\n');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    const store = make(dir);
    expect(await store.claim('judge', ID)).toBeNull();
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const taken = await store.claim('judge', ID);
    expect(taken).not.toBeNull();
  });
});
