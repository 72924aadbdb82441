/** Temp files made ahead by a worker thread (engine/util/temp-supply.ts) for a busy process's atomic writes. */
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { install, tempName, writeFileAtomic, writeTemp } from '../../engine/util/atomic-write.js';
import { processSuffix, supplySuffix } from '../../engine/util/temp-names.js';
import { sweepTempSupplies, takeSupplied, useTempSupply } from '../../engine/util/temp-supply.js';
import { sweepTemps } from '../../engine/store/files.js';
import { inDirectory, inDirectoryOptions } from '../../engine/util/in-directory.js';
import { BIN, ROOT, tempDir } from '../helpers.js';
import { confirmedStore, start, storeEnv } from '../torture/harness.js';

const OWNER = 'testhost.1.a1b2c3';
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

function supplied(root: string): () => Promise<void> {
  const stop = useTempSupply(root, OWNER);
  stops.push(stop);
  return stop;
}

/** Every name under `dir`, recursively, relative to it. */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? [`${prefix}${entry.name}/`, ...walk(path.join(dir, entry.name), `${prefix}${entry.name}/`)] : [`${prefix}${entry.name}`],
  );
}

/** Write until a temp file comes from the supply (its worker answers asynchronously). */
async function writeUntilSupplied(dir: string, from = 0): Promise<{ temp: string; next: number }> {
  for (let i = from; i < from + 2000; i++) {
    const target = path.join(dir, `${i}.json`);
    const temp = await writeTemp(target, `{"n":${i}}\n`);
    install(temp, target);
    if (path.basename(temp).startsWith('.supply.')) return { temp, next: i + 1 };
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error('no temp file came from the supply');
}

/** Call `touch` on each temp file waiting in the lanes of the supply under `root` (as a writer of the store could); how many there were. */
function eachWaitingTemp(root: string, touch: (file: string) => void): number {
  const [own] = readdirSync(path.join(root, '.tmp'));
  let count = 0;
  for (const lane of readdirSync(path.join(root, '.tmp', own!))) {
    const dir = path.join(root, '.tmp', own!, lane);
    for (const name of readdirSync(dir)) {
      touch(path.join(dir, name));
      count++;
    }
  }
  return count;
}

describe('temp files made ahead', () => {
  it('serves temp files in the target’s own directory, and every write lands whole', async () => {
    const root = tempDir();
    for (const sub of ['proposals', 'approved']) mkdirSync(path.join(root, sub));
    supplied(root);
    const { temp, next } = await writeUntilSupplied(path.join(root, 'proposals'));
    // SPEC §4: the temp file is in the target's directory, whoever made it.
    expect(path.dirname(temp)).toBe(path.join(root, 'proposals'));
    for (let i = next; i < next + 40; i++) await writeFileAtomic(path.join(root, 'proposals', `${i}.json`), `{"n":${i}}\n`);
    await writeUntilSupplied(path.join(root, 'approved'));
    for (let i = 0; i < next + 40; i++) expect(readFileSync(path.join(root, 'proposals', `${i}.json`), 'utf8')).toBe(`{"n":${i}}\n`);
    const mode = lstatSync(path.join(root, 'proposals', `${next}.json`)).mode & 0o777;
    expect(mode).toBe(0o644 & ~process.umask());
  });

  it('removes what it did not hand out when it stops, and its own directory', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    const stop = supplied(root);
    await writeUntilSupplied(path.join(root, 'proposals'));
    // Ready ones wait in the supply's lanes, never beside the targets.
    expect(walk(root).some((name) => name.startsWith('.tmp/') && name.endsWith('.tmp'))).toBe(true);
    expect(walk(path.join(root, 'proposals')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    await stop();
    expect(walk(root).filter((name) => name.endsWith('.tmp') || name.startsWith('.tmp'))).toEqual([]);
  });

  it('a descriptor it handed out stays open after its thread has ended', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    const stop = supplied(root);
    const { next } = await writeUntilSupplied(path.join(root, 'proposals'));
    let temp = takeSupplied(path.join(root, 'proposals', `${next}.json`), undefined);
    for (let i = 0; !temp && i < 500; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      temp = takeSupplied(path.join(root, 'proposals', `${next}.json`), undefined);
    }
    expect(temp).toBeDefined();
    await stop(); // the worker is gone: a worker that tracked its descriptors would have closed this one
    writeSync(temp!.fd, '{"kept":true}\n');
    install(temp!.file, path.join(root, 'proposals', 'kept.json'));
    expect(readFileSync(path.join(root, 'proposals', 'kept.json'), 'utf8')).toBe('{"kept":true}\n');
  });

  it('never makes a write wait or fail: with no directory of its own, writes make their temp files as before', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    writeFileSync(path.join(root, '.tmp'), 'not a directory');
    supplied(root);
    for (let i = 0; i < 60; i++) {
      const target = path.join(root, 'proposals', `${i}.json`);
      const temp = await writeTemp(target, `${i}\n`);
      expect(path.basename(temp).startsWith('.supply.')).toBe(false);
      install(temp, target);
    }
    expect(readdirSync(path.join(root, 'proposals'))).toHaveLength(60);
  });

  it('never makes its directory through a link: a `.tmp` that links out of the store is not used', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    const outside = tempDir();
    symlinkSync(outside, path.join(root, '.tmp'));
    supplied(root);
    for (let i = 0; i < 60; i++) await writeFileAtomic(path.join(root, 'proposals', `${i}.json`), `${i}\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(readdirSync(outside)).toEqual([]);
    expect(readdirSync(path.join(root, 'proposals'))).toHaveLength(60);
  });

  it('two supplies serving one directory (a store reached by two paths) never hand out the same name', async () => {
    const root = tempDir();
    const real = path.join(root, 'store');
    mkdirSync(path.join(real, 'proposals'), { recursive: true });
    const alias = path.join(root, 'alias');
    symlinkSync(real, alias);
    supplied(real);
    supplied(alias);
    await writeUntilSupplied(path.join(real, 'proposals'));
    await writeUntilSupplied(path.join(alias, 'proposals'), 5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const writes = Array.from({ length: 16 }, (_, j) => [
      writeFileAtomic(path.join(real, 'proposals', `a${j}.json`), `{"id":"a${j}"}\n`),
      writeFileAtomic(path.join(alias, 'proposals', `b${j}.json`), `{"id":"b${j}"}\n`),
    ]).flat();
    await Promise.all(writes);
    for (let j = 0; j < 16; j++)
      for (const name of [`a${j}`, `b${j}`]) expect(readFileSync(path.join(real, 'proposals', `${name}.json`), 'utf8')).toBe(`{"id":"${name}"}\n`);
  });

  it('lets go of its thread, descriptors and lanes when nothing asks for a while, and starts again', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    supplied(root);
    const { next } = await writeUntilSupplied(path.join(root, 'proposals'));
    expect(readdirSync(root)).toContain('.tmp');
    await new Promise((resolve) => setTimeout(resolve, 1600));
    expect(readdirSync(root)).not.toContain('.tmp');
    await writeUntilSupplied(path.join(root, 'proposals'), next);
  });

  it('follows no link swapped in for its directories after it started, and removes nothing through one', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    supplied(root);
    const { next } = await writeUntilSupplied(path.join(root, 'proposals'));
    await new Promise((resolve) => setTimeout(resolve, 200)); // no batch being made: each checks its lane first
    const [own] = readdirSync(path.join(root, '.tmp'));
    // Someone moves `.tmp` aside and makes one whose lanes link out of the store.
    const outside = tempDir();
    writeFileSync(path.join(outside, 'precious.tmp'), 'mine');
    renameSync(path.join(root, '.tmp'), path.join(root, 'aside'));
    mkdirSync(path.join(root, '.tmp', own!), { recursive: true });
    for (let lane = 0; lane < 4; lane++) symlinkSync(outside, path.join(root, '.tmp', own!, `l${lane}`));
    const untouched = lstatSync(outside).mtimeMs;
    // Enough writes, with pauses for the worker's batches, that lanes are filled again after the swap.
    for (let i = next; i < next + 160; i++) {
      await writeFileAtomic(path.join(root, 'proposals', `${i}.json`), `{"n":${i}}\n`);
      if (i % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const stop of stops.splice(0)) await stop();
    expect(readdirSync(outside)).toEqual(['precious.tmp']);
    expect(lstatSync(outside).mtimeMs).toBe(untouched); // nothing was ever made there, even for a while
    for (let i = next; i < next + 160; i++) expect(readFileSync(path.join(root, 'proposals', `${i}.json`), 'utf8')).toBe(`{"n":${i}}\n`);
  });

  it('never puts in place a file planted in its lanes instead of the one it made', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'proposals'));
    supplied(root);
    const { next } = await writeUntilSupplied(path.join(root, 'proposals'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const planted = eachWaitingTemp(root, (file) => {
      rmSync(file);
      writeFileSync(file, '{"planted":true}\n');
    });
    expect(planted).toBeGreaterThan(0);
    for (let i = next; i < next + 40; i++) await writeFileAtomic(path.join(root, 'proposals', `${i}.json`), `{"n":${i}}\n`);
    for (let i = next; i < next + 40; i++) expect(readFileSync(path.join(root, 'proposals', `${i}.json`), 'utf8')).toBe(`{"n":${i}}\n`);
  });

  it('never serves a temp file written to, or linked to, in its lane since it was made; nor moves in a directory planted there', async () => {
    // Three supplies of their own, at once.
    const tampers = ['append', 'link', 'directory'] as const;
    await Promise.all(
      tampers.map(async (tamper) => {
        const root = tempDir();
        mkdirSync(path.join(root, 'proposals'));
        const outside = tempDir();
        supplied(root);
        const { next } = await writeUntilSupplied(path.join(root, 'proposals'));
        await new Promise((resolve) => setTimeout(resolve, 100));
        const touched = eachWaitingTemp(root, (file) => {
          if (tamper === 'append') appendFileSync(file, '                    "tail": "planted"}\n');
          else if (tamper === 'link') linkSync(file, path.join(outside, path.basename(file)));
          else {
            rmSync(file);
            mkdirSync(file);
          }
        });
        expect(touched).toBeGreaterThan(0);
        for (let i = next; i < next + 40; i++) await writeFileAtomic(path.join(root, 'proposals', `${i}.json`), `{"n":${i}}\n`);
        for (let i = next; i < next + 40; i++) expect(readFileSync(path.join(root, 'proposals', `${i}.json`), 'utf8'), tamper).toBe(`{"n":${i}}\n`);
        // Nothing but the written files (and no directory) in the target; nothing written through a link out.
        expect(
          readdirSync(path.join(root, 'proposals')).filter((name) => !/^\d+\.json$/.test(name)),
          tamper,
        ).toEqual([]);
        for (const name of readdirSync(outside)) expect(readFileSync(path.join(outside, name), 'utf8'), tamper).toBe('');
      }),
    );
  });

  it('serves no temp file into a directory where a file made there would take another group (setgid), and serves one where it would not', async () => {
    // Root may give a directory any group; anyone else one of their own groups, if they have another.
    const other = process.getuid?.() === 0 ? 1 : process.getgroups?.().find((group) => group !== process.getegid?.());
    const root = tempDir();
    for (const sub of ['proposals', 'same', 'other']) mkdirSync(path.join(root, sub));
    chmodSync(path.join(root, 'same'), 0o2755); // setgid, this process's own group
    chmodSync(path.join(root, 'other'), 0o2755);
    if (other !== undefined) chownSync(path.join(root, 'other'), -1, other);
    supplied(root);
    await writeUntilSupplied(path.join(root, 'proposals'));
    const served = async (sub: string) => {
      let count = 0;
      for (let i = 0; i < 40; i++) {
        const target = path.join(root, sub, `${i}.json`);
        const temp = await writeTemp(target, '{}\n');
        if (path.basename(temp).startsWith('.supply.')) count++;
        install(temp, target);
        expect(lstatSync(target).gid, sub).toBe(lstatSync(path.join(root, sub)).gid);
      }
      return count;
    };
    expect(await served('same')).toBeGreaterThan(0);
    if (other !== undefined) expect(await served('other')).toBe(0);
  });

  it('never names a temp file as an atomic write names one for a target called `supply`', async () => {
    // Both are `.supply.<pid>.<counter><suffix>.tmp`; the suffixes differ in their first digit.
    expect(supplySuffix).toMatch(/^[0-9a-f]{6}$/);
    expect(supplySuffix[0]).not.toBe(processSuffix[0]);
    expect(supplySuffix.slice(1)).toBe(processSuffix.slice(1));
    const dir = tempDir();
    mkdirSync(path.join(dir, 'proposals'));
    supplied(dir);
    const { temp } = await writeUntilSupplied(path.join(dir, 'proposals'));
    expect(path.basename(temp).endsWith(`${supplySuffix}.tmp`)).toBe(true);
    expect(path.basename(tempName(path.join(dir, 'proposals', 'supply'))).endsWith(`${processSuffix}.tmp`)).toBe(true);
  });

  it('a mode other than the default is never served', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'keys'));
    supplied(root);
    await writeUntilSupplied(path.join(root, 'keys'));
    const temp = await writeTemp(path.join(root, 'keys', 'secret'), 'x', { mode: 0o600 });
    expect(path.basename(temp).startsWith('.supply.')).toBe(false);
    expect(lstatSync(temp).mode & 0o777).toBe(0o600 & ~process.umask());
  });
});

describe('a command that used a supply', () => {
  it('exits with its own exit code, and leaves no temp file behind', async () => {
    // A run that fails (a directory where a ledger belongs) after making temp files ahead: closing
    // the store waits for the worker's last batch, which alone must not let the process end early.
    const t = await confirmedStore(40);
    await t.store.close(); // the set-up's own supply: its lanes go
    expect(walk(t.storeDir).filter((name) => name.startsWith('.tmp'))).toEqual([]);
    rmSync(path.join(t.storeDir, 'declined.jsonl'), { force: true });
    mkdirSync(path.join(t.storeDir, 'declined.jsonl'));
    const run = await start(['run', 'judge', '--yes'], storeEnv(t.storeDir)).done;
    const without = await start(['run', 'judge', '--yes'], { ...storeEnv(t.storeDir), PIPELINE_TEMP_SUPPLY: 'off' }).done;
    expect(without.code).not.toBe(0);
    expect(run.code).toBe(without.code);
    expect(run.stderr).toMatch(/declined\.jsonl/);
    expect(walk(t.storeDir).filter((name) => name.endsWith('.tmp') || name.startsWith('.tmp'))).toEqual([]);
  }, 60_000);
});

describe('a command that used a supply, in a tight spot', () => {
  const sh = (command: string, env: NodeJS.ProcessEnv) => spawnSync('bash', ['-c', command], { env, encoding: 'utf8', cwd: ROOT });

  it('a process allowed few descriptors keeps them for its work', async () => {
    const t = await confirmedStore(300);
    await t.store.close();
    const run = sh(`ulimit -n 96 && exec "${process.execPath}" "${BIN}" run judge --yes --concurrency 32`, storeEnv(t.storeDir));
    expect(run.stderr).not.toMatch(/too many open files/i);
    expect(run.status).toBe(0);
  }, 60_000);

  it('a command that ends early (its output closed) leaves no lanes behind', async () => {
    const t = await confirmedStore(40);
    await t.store.close();
    const run = sh(`"${process.execPath}" "${BIN}" --json run judge --yes | true`, storeEnv(t.storeDir));
    expect(run.status).toBe(0);
    expect(walk(t.storeDir).filter((name) => name.endsWith('.tmp') || name.startsWith('.tmp'))).toEqual([]);
  }, 60_000);
});

describe('working in a directory through a descriptor', () => {
  it('removes an entry of the directory it holds, never of one a link swapped in for it points to', () => {
    for (const proc of [true, false]) {
      inDirectoryOptions.proc = proc;
      try {
        const root = tempDir();
        const lane = path.join(root, 'l0');
        const outside = tempDir();
        mkdirSync(lane);
        for (const dir of [lane, outside]) writeFileSync(path.join(dir, 'x.tmp'), 'keep me');
        const removal = () =>
          inDirectory(lane, (at) => {
            // Swapped after it was opened: the lane moves away, a link out of the store takes its name.
            renameSync(lane, path.join(root, 'moved'));
            symlinkSync(outside, lane);
            unlinkSync(at('x.tmp'));
          });
        // With /proc the entry goes from the directory held; without it, the swap is seen and nothing goes.
        if (proc) removal();
        else expect(removal).toThrow(/no longer the directory it was/);
        expect(readFileSync(path.join(outside, 'x.tmp'), 'utf8'), `proc ${proc}`).toBe('keep me');
        expect(readdirSync(path.join(root, 'moved')), `proc ${proc}`).toEqual(proc ? [] : ['x.tmp']);
        expect(() => inDirectory(lane, () => undefined)).toThrow(/ELOOP|ENOTDIR/);
      } finally {
        inDirectoryOptions.proc = true;
      }
    }
  });
});

describe('sweeping what a killed process left', () => {
  const old = (file: string) => utimesSync(file, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  const DEAD = 2 ** 22 + 12345; // above Linux's pid_max default: no process has it

  it('removes a dead writer’s own directory and its files; a live or young one, or a link, stays', () => {
    const root = tempDir();
    const tmp = path.join(root, '.tmp');
    const dead = path.join(tmp, 'gone.12345.dead~1');
    mkdirSync(path.join(dead, 'l0'), { recursive: true });
    writeFileSync(path.join(dead, 'l0', '.supply.x.tmp'), '');
    old(dead);
    const live = path.join(tmp, 'here.1.live~2');
    mkdirSync(live);
    old(live);
    const young = path.join(tmp, 'gone.12345.dead~3');
    mkdirSync(young);
    const outside = path.join(root, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'keep.tmp'), 'mine');
    symlinkSync(outside, path.join(tmp, 'gone.12345.dead~4'));
    // Asked by owner name, not pid: a restarted container's pid 1 is another writer.
    expect(sweepTempSupplies(tmp, (owner) => owner === 'here.1.live')).toBe(1);
    expect(readdirSync(tmp).sort()).toEqual(['gone.12345.dead~3', 'gone.12345.dead~4', 'here.1.live~2']);
    expect(readFileSync(path.join(outside, 'keep.tmp'), 'utf8')).toBe('mine');
  });

  it('a temp file a killed process left beside a target is swept by the pid in its name', async () => {
    const root = tempDir();
    const file = path.join(root, `.supply.${DEAD}.1x9abcdef.tmp`);
    writeFileSync(file, '');
    old(file);
    expect(await sweepTemps([root])).toBe(1);
  });

  it('a temp file left by an earlier process with this process’s pid (a restarted container’s pid 1) is swept; this process’s own stay', async () => {
    const root = tempDir();
    const other = (processSuffix[1] === '0' ? '1' : '0').repeat(6);
    const names = [`.a.json.${process.pid}.2${other}.tmp`, `.a.json.${process.pid}.3${processSuffix}.tmp`, `.supply.${process.pid}.4${supplySuffix}.tmp`];
    for (const name of names) {
      writeFileSync(path.join(root, name), '');
      old(path.join(root, name));
    }
    expect(await sweepTemps([root])).toBe(1);
    expect(readdirSync(root).sort()).toEqual(names.slice(1).sort());
  });

  it('knows the temp names of every copy of the engine loaded in this thread as its own (a bundle beside the unbundled modules)', async () => {
    // A second copy of the module: the same file under another URL (vite loads each URL once).
    // @ts-expect-error -- TypeScript resolves no module with a query string
    const copy = (await import('../../engine/util/temp-names.js?copy')) as typeof import('../../engine/util/temp-names.js');
    expect(copy.processSuffix).not.toBe(processSuffix);
    const root = tempDir();
    const theirs = `.a.json.${process.pid}.5${copy.processSuffix}.tmp`;
    writeFileSync(path.join(root, theirs), '');
    old(path.join(root, theirs));
    expect(await sweepTemps([root])).toBe(0);
    expect(readdirSync(root)).toEqual([theirs]);
  });
});
