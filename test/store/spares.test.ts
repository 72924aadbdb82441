/**
 * Spare inodes (engine/store/spares.ts): a replaced proposal file's inode is kept under a temp name
 * and the next document is written into it, instead of a new file being created and the old one
 * freed. It is rewritten only when that cannot touch a file anyone reads: its temp name is its
 * only name, it is still the inode that was kept, its owner and mode are a fresh file's — and not
 * before it has waited MIN_AGE_MS, so the reusing write stamps an mtime no earlier version of the
 * inode had (the status index trusts mtime, size and inode).
 */
import { chmodSync, linkSync, lstatSync, readdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileStore } from '../../engine/store/file-store.js';
import { MIN_AGE_MS, Spares } from '../../engine/store/spares.js';
import type { AuditRow } from '../../engine/store/types.js';
import { install, writeTemp } from '../../engine/util/atomic-write.js';
import { tempDir } from '../helpers.js';
import { LAYOUT } from './contract.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A directory with `doc.json` written as the store writes a new file, and its spares. */
async function setUp() {
  const dir = tempDir('pipeline-spares-');
  const target = path.join(dir, 'doc.json');
  const spares = new Spares();
  install(await writeTemp(target, 'version 1\n'), target);
  spares.installedFresh(target);
  return { dir, target, spares };
}

/** Replace `target` with `text` as the store does, keeping the replaced inode. */
async function replace(spares: Spares, target: string, text: string): Promise<{ reused: boolean }> {
  const spare = await spares.write(Buffer.from(text));
  const temp = spare ?? (await writeTemp(target, text));
  const held = spares.hold(target);
  install(temp, target);
  if (held !== undefined) spares.kept(held);
  return { reused: spare !== undefined };
}

/** Let MIN_AGE_MS pass for the pool without waiting. */
function later(ms = MIN_AGE_MS) {
  const now = Date.now();
  vi.spyOn(Date, 'now').mockReturnValue(now + ms);
}

const spareFiles = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.tmp'));

describe('spare inodes', () => {
  it('write the next document into the inode of a replaced one, once it has waited MIN_AGE_MS', async () => {
    const { dir, target, spares } = await setUp();
    const first = lstatSync(target).ino;
    expect((await replace(spares, target, 'version 2, longer\n')).reused).toBe(false);
    expect(spares.size).toBe(1);
    // Too soon: a new file, and the pool keeps the spare.
    expect(await spares.write(Buffer.from('too soon\n'))).toBeUndefined();
    expect(spares.size).toBe(1);
    later();
    expect((await replace(spares, target, 'v3\n')).reused).toBe(true);
    expect(lstatSync(target).ino).toBe(first);
    // Shorter than what the inode held: the end is cut off.
    expect(readFileSync(target, 'utf8')).toBe('v3\n');
    spares.clear();
    expect(spareFiles(dir)).toEqual([]);
  });

  it('never rewrite an inode that has another name (a backup’s hard link keeps the old version)', async () => {
    const { dir, target, spares } = await setUp();
    await replace(spares, target, 'version 2\n');
    const [spare] = spareFiles(dir);
    const backup = path.join(dir, 'backup-of-version-1');
    linkSync(path.join(dir, spare!), backup);
    later();
    expect(await spares.write(Buffer.from('version 3\n'))).toBeUndefined();
    expect(readFileSync(backup, 'utf8')).toBe('version 1\n');
    expect(spareFiles(dir), 'the spare name is given up, the backup stays').toEqual([]);
  });

  it('never keep an inode that already has another name', async () => {
    const { dir, target, spares } = await setUp();
    linkSync(target, path.join(dir, 'backup'));
    await replace(spares, target, 'version 2\n');
    expect(spares.size).toBe(0);
    expect(spareFiles(dir)).toEqual([]);
  });

  it('never write through a spare name that something else took, nor into one whose mode changed', async () => {
    const { dir, target, spares } = await setUp();
    await replace(spares, target, 'version 2\n');
    await replace(spares, target, 'version 3\n');
    const [linked, chmodded] = spareFiles(dir).sort();
    const outside = path.join(tempDir('pipeline-outside-'), 'file');
    writeFileSync(outside, 'outside\n');
    unlinkSync(path.join(dir, linked!));
    symlinkSync(outside, path.join(dir, linked!));
    chmodSync(path.join(dir, chmodded!), 0o600);
    later();
    expect(await spares.write(Buffer.from('version 4\n'))).toBeUndefined();
    expect(readFileSync(outside, 'utf8')).toBe('outside\n');
    expect(spareFiles(dir)).toEqual([]);
  });
});

describe('the file store with spare inodes', () => {
  const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const created: AuditRow = { at: '2026-11-01T00:00:00Z', id: ID, event: 'create', from: null, to: 'pending', stage: 'test', actor: 'cli' };
  const states = ['pending', 'confirmed', 'approved'];

  it('reuses replaced inodes across commits, its index sees every version, and closing leaves no spare', async () => {
    const store = new FileStore({ dir: tempDir('pipeline-store-'), ...LAYOUT });
    const made = await store.create({ proposal: { id: ID, status: 'pending', n: 0 }, key: 'a', audit: created });
    if (!made.ok) throw new Error('not created');
    let version = made.version;
    const file = path.join(store.location, 'proposals', `${ID}.json`);
    const inodes = new Set<number>();
    for (let n = 1; n <= 12; n++) {
      const status = states[n % 3]!;
      const committed = await store.commit({ id: ID, version, next: { id: ID, status, n }, audit: [{ ...created, event: 'set', from: null, to: status }] });
      if (!committed.ok) throw new Error(`commit ${n}: ${committed.reason}`);
      version = committed.version;
      inodes.add(lstatSync(file).ino);
      const { counts } = await store.counts(states);
      expect(counts[status], `after commit ${n}`).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, MIN_AGE_MS + 5));
    }
    expect(inodes.size, 'later commits wrote into inodes earlier versions had').toBeLessThan(12);
    expect(readFileSync(file, 'utf8')).toBe(version);
    await store.close();
    expect(readdirSync(path.join(store.location, 'proposals'))).toEqual([`${ID}.json`]);
  });
});
