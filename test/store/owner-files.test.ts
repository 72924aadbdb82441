/**
 * Owner files (engine/store/owner-files.ts): a lock is a hard link to its owner's identity file;
 * a live owner keeps it, a dead one (or a file that is no identity) is stale and taken over, an
 * owner on another host holds it only for its lease.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OwnerFiles, ownerFileName } from '../../engine/store/owner-files.js';
import { SELF } from '../../engine/store/process-identity.js';
import { loadPipeline } from '../../engine/config/load.js';
import { openFileStore } from '../../engine/store/open.js';
import { copyPipeline, tempDir } from '../helpers.js';

/** A pid no process has any more (a child that has exited). */
function deadPid(): number {
  const pid = spawnSync('true').pid;
  if (pid === undefined) throw new Error('no child started');
  return pid;
}

function setup() {
  const dir = tempDir('pipeline-owners-');
  return { owners: path.join(dir, '.owners'), lock: path.join(dir, 'lock') };
}

describe('ownerFileName', () => {
  it('is <host>.<pid>.<nonce>, with anything but [A-Za-z0-9_.-] in the host replaced', () => {
    expect(ownerFileName({ host: 'build box/7', pid: 42, nonce: 'ab12' })).toBe('build_box_7.42.ab12');
    expect(ownerFileName({ host: 'h-1.local', pid: 1, nonce: 'n' })).toBe('h-1.local.1.n');
  });
});

describe('OwnerFiles', () => {
  it('takes a free file as a hard link to its own identity file, written whole', () => {
    const { owners, lock } = setup();
    const files = new OwnerFiles(owners);
    const held = files.tryAcquire(lock);
    expect(held).not.toBeNull();
    const own = path.join(owners, files.name);
    expect(files.name).toBe(ownerFileName(files.identity));
    expect(statSync(lock).ino).toBe(statSync(own).ino);
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toEqual(files.identity);
    expect(readdirSync(owners)).toEqual([files.name]);
    expect(files.holds(lock)).toBe(true);
    expect(files.holder(lock)).toBe('mine');
  });

  it('leaves a file a live owner holds alone, and hands it on once released', async () => {
    const { owners, lock } = setup();
    const first = new OwnerFiles(owners);
    const second = new OwnerFiles(owners);
    const held = first.tryAcquire(lock)!;
    expect(second.tryAcquire(lock)).toBeNull();
    expect(second.attempt(lock)).toEqual({ holder: 'live' });
    expect(second.holder(lock)).toBe('live');
    expect(second.holds(lock)).toBe(false);
    expect(second.alive(first.name)).toBe(true);
    await held.release();
    expect(existsSync(lock)).toBe(false);
    expect(first.holds(lock)).toBe(false);
    expect(second.holder(lock)).toBe('none');
    expect(second.tryAcquire(lock)).not.toBeNull();
    expect(second.holds(lock)).toBe(true);
  });

  it("releasing twice removes nothing the second time (the file may be someone else's by then)", async () => {
    const { owners, lock } = setup();
    const first = new OwnerFiles(owners);
    const second = new OwnerFiles(owners);
    const held = first.tryAcquire(lock)!;
    await held.release();
    second.tryAcquire(lock);
    await held.release();
    expect(second.holds(lock)).toBe(true);
  });

  it('takes over at once a file whose owner on this host is dead — unless the caller says not yet', () => {
    const { owners, lock } = setup();
    const dead = { host: SELF.host, pid: deadPid(), start: null, nonce: 'gone' };
    writeFileSync(lock, JSON.stringify(dead));
    const files = new OwnerFiles(owners);
    expect(files.holder(lock)).toBe('stale');
    expect(files.alive(path.basename(lock))).toBe(false);
    const seen: unknown[] = [];
    expect(files.attempt(lock, (owner) => (seen.push(owner), false))).toEqual({ holder: 'stale', owner: dead });
    expect(seen).toEqual([dead]);
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toEqual(dead);
    const taken = files.attempt(lock);
    expect('held' in taken).toBe(true);
    expect(files.holds(lock)).toBe(true);
    expect(existsSync(`${lock}.takeover`)).toBe(false);
  });

  it('treats a file that is not an identity (a power loss, an older version) as stale', () => {
    const { owners, lock } = setup();
    for (const text of ['', '{"pid": "7"}', 'not json']) {
      writeFileSync(lock, text);
      const files = new OwnerFiles(owners);
      expect(files.holder(lock)).toBe('stale');
      expect(files.tryAcquire(lock)).not.toBeNull();
      expect(files.holds(lock)).toBe(true);
    }
  });

  it("holds an owner on another host live for its lease (the file's mtime), stale after", () => {
    const { owners, lock } = setup();
    const remote = { host: `${os.hostname()}-elsewhere`, pid: process.pid, start: null, nonce: 'r' };
    writeFileSync(lock, JSON.stringify(remote));
    const files = new OwnerFiles(owners, 60_000);
    expect(files.holder(lock)).toBe('live');
    expect(files.tryAcquire(lock)).toBeNull();
    const past = new Date(Date.now() - 61_000);
    utimesSync(lock, past, past);
    expect(files.holder(lock)).toBe('stale');
    expect(files.tryAcquire(lock)).not.toBeNull();
  });

  it("renew() moves the shared owner inode's mtime forward, keeping a lease on another host", () => {
    const { owners, lock } = setup();
    const files = new OwnerFiles(owners);
    files.tryAcquire(lock);
    const own = path.join(owners, files.name);
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(own, past, past);
    // the lock is the same inode: its mtime is the owner file's
    expect(Date.now() - statSync(lock).mtimeMs).toBeGreaterThan(3_000_000);
    files.renew();
    expect(Date.now() - statSync(lock).mtimeMs).toBeLessThan(600_000);
  });

  it('sweep() removes the owner files of dead processes of this host only', () => {
    const { owners, lock } = setup();
    const files = new OwnerFiles(owners);
    files.tryAcquire(lock);
    const other = new OwnerFiles(owners);
    other.tryAcquire(`${lock}-2`);
    const dead = ownerFileName({ host: SELF.host, pid: deadPid(), nonce: 'd' });
    writeFileSync(path.join(owners, dead), JSON.stringify({ host: SELF.host, pid: deadPid(), start: null, nonce: 'd' }));
    const remote = ownerFileName({ host: 'elsewhere', pid: 1, nonce: 'r' });
    writeFileSync(path.join(owners, remote), JSON.stringify({ host: 'elsewhere', pid: 1, start: null, nonce: 'r' }));
    // a file being written (not yet an identity, and young) is left for its writer
    writeFileSync(path.join(owners, 'young.tmp'), '');
    expect(files.sweep()).toBe(1);
    expect(readdirSync(owners).sort()).toEqual([files.name, other.name, remote, 'young.tmp'].sort());
    // an old file that is no identity (its pid is not a number) is left over, and removed
    const old = new Date(Date.now() - 60_000);
    writeFileSync(path.join(owners, 'odd'), '{"pid": "7"}');
    for (const name of ['young.tmp', 'odd']) utimesSync(path.join(owners, name), old, old);
    expect(files.sweep()).toBe(2);
    expect(readdirSync(owners).sort()).toEqual([files.name, other.name, remote].sort());
  });

  it('acquire() waits for a holder to release, and gives up with EBUSY after its timeout', async () => {
    const { owners, lock } = setup();
    const first = new OwnerFiles(owners);
    const second = new OwnerFiles(owners);
    const held = first.tryAcquire(lock)!;
    const waiting = second.acquire(lock, 10_000);
    let done = false;
    void waiting.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    await held.release();
    await waiting;
    expect(second.holds(lock)).toBe(true);
    // A refusal worth retrying (exit 2) with what to do, never an internal error.
    await expect(first.acquire(lock, 0)).rejects.toMatchObject({
      code: 'EBUSY',
      exitCode: 2,
      message: 'lock is busy (held by another process for over 0 s)',
      hint: 'another process holds it: run this again once that process is done',
    });
  });
});

describe("a pipeline's claim_ttl", () => {
  it("is the lease of another host's claims in the file store the engine opens (not a fixed 5 minutes)", async () => {
    const dir = copyPipeline();
    const main = path.join(dir, 'pipeline.yaml');
    writeFileSync(main, readFileSync(main, 'utf8').replace(/^defaults:\n/m, 'defaults:\n  claim_ttl: 2s\n'));
    const pipeline = await loadPipeline(dir, { PIPELINE_CONFIG_CACHE: 'off' }, { useCache: false });
    expect(pipeline.defaults.claimTtl).toBe(2);
    const store = openFileStore(pipeline, path.join(tempDir(), 'store'));
    // Another host's run claimed a proposal, and died 3 s ago: past a 2 s lease, its claim is taken.
    const claims = path.join(store.location, '.claims', 'judge');
    mkdirSync(claims, { recursive: true });
    const claim = path.join(claims, '01ARZ3NDEKTSV4RRFFQ69G5FAV');
    writeFileSync(claim, JSON.stringify({ host: `${os.hostname()}-elsewhere`, pid: 1, start: null, nonce: 'r' }));
    const past = new Date(Date.now() - 3_000);
    utimesSync(claim, past, past);
    const got = await store.claim('judge', { keys: ['01ARZ3NDEKTSV4RRFFQ69G5FAV'] }, 1, 2_000);
    expect(got.leases.map((lease) => lease.key)).toEqual(['01ARZ3NDEKTSV4RRFFQ69G5FAV']);
    await store.release(got.leases);
  });
});
