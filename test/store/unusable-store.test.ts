/**
 * SPEC §4, §7, §11: a store the person has to fix — a path that is a file, a server that does not
 * answer, a ledger or audit log that is a symbolic link, a disk it cannot write — is exit 1 with a
 * message naming the store and the path (a URL without its password), never an internal error,
 * and nothing is written through it.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PipelineError } from '../../engine/errors.js';
import { describeFileStoreFailure, describePostgresFailure, withPlainFailures } from '../../engine/store/failures.js';
import { FileStore } from '../../engine/store/file-store.js';
import { runIn } from '../cli/memory-io.js';
import { BIN, proposalInput, readableCheckout, ROOT, SECRET_FILE, tempDir } from '../helpers.js';
import { LAYOUT, storeContract } from './contract.js';
import { fileStoreHooks } from './file-hooks.js';

const env = () => ({ PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! });
const ID = '01M8T33A99WYB4PAQ425EVP632';

/** A store with one pending proposal, made through the command line. */
async function storeWithProposal(): Promise<{ store: string; id: string }> {
  const store = path.join(tempDir('pipeline-unusable-'), 'store');
  const made = await runIn(['--store', store, 'propose', '-'], env(), { input: JSON.stringify(proposalInput()) });
  expect(made.code, made.stderr).toBe(0);
  return { store, id: made.stdout.trim() };
}

// The wrapper the command line opens every store with passes the whole contract unchanged.
storeContract('file store opened for a command', {
  make: async (layout) => {
    const dir = tempDir('pipeline-store-');
    return withPlainFailures(new FileStore({ dir, ...layout }), (error) => describeFileStoreFailure(error, dir));
  },
  reopen: async (store) => new FileStore({ dir: store.location, ...LAYOUT }),
  ...fileStoreHooks,
});

describe('--store naming something that cannot be a store directory', () => {
  it.each([['status'], ['list'], ['show', ID], ['viz', '--format', 'json'], ['confirm', ID, '--visibility', 'org'], ['run', 'transform'], ['pool', 'top']])(
    'refuses `%s` with a file there, naming it, exit 1',
    async (...args) => {
      const file = path.join(tempDir('pipeline-unusable-'), 'afile');
      writeFileSync(file, 'hi\n');
      const result = await runIn(['--store', file, ...args], env());
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain(`error: ${file} is a file, not a store directory`);
      expect(result.stderr).not.toContain('no store at');
      expect(result.stdout).toBe('');
      expect(readFileSync(file, 'utf8')).toBe('hi\n');
    },
  );

  it('refuses a path under a file, saying a part of it is a file', async () => {
    const file = path.join(tempDir('pipeline-unusable-'), 'afile');
    writeFileSync(file, 'hi\n');
    const result = await runIn(['--store', path.join(file, 'store'), 'status'], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error: ${path.join(file, 'store')} cannot be a store directory: a part of its path is a file`);
  });
});

describe('a PostgreSQL store that does not answer', () => {
  it.each([['status'], ['list'], ['confirm', ID, '--visibility', 'org']])('refuses `%s` naming the server without its password, exit 1', async (...args) => {
    const result = await runIn(['--store', 'postgres://someone:s3cret@127.0.0.1:1/db', ...args], env());
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('error: cannot connect to the PostgreSQL store at postgres://127.0.0.1:1/db?schema=pipeline: connection refused');
    expect(result.stderr).not.toContain('s3cret');
  });
});

describe('a ledger or audit log that is a symbolic link', () => {
  it.each([
    ['events.jsonl', 'confirm', ['--visibility', 'org']],
    ['passed.jsonl', 'pass', []],
  ] as const)('%s: `%s` is refused naming the link, writes nothing, exit 1', async (name, command, options) => {
    const { store, id } = await storeWithProposal();
    const outside = path.join(tempDir('pipeline-outside-'), name);
    const link = path.join(store, name);
    try {
      renameSync(link, outside);
    } catch {
      writeFileSync(outside, '');
    }
    symlinkSync(outside, link);
    const before = readFileSync(outside, 'utf8');
    const proposal = readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8');
    const result = await runIn(['--store', store, command, id, ...options], env());
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(`error: ${link} is a symbolic link, not a regular file; the store does not read or write through it`);
    expect(readFileSync(outside, 'utf8')).toBe(before);
    expect(readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8')).toBe(proposal);
  });
});

describe('a directory of the store that is a symbolic link', () => {
  it('is refused as a link where a directory belongs, and the hint asks for a real directory, not a file', async () => {
    const { store, id } = await storeWithProposal();
    const proposals = path.join(store, 'proposals');
    const outside = path.join(tempDir('pipeline-outside-'), 'proposals');
    renameSync(proposals, outside);
    symlinkSync(outside, proposals);
    const result = await runIn(['--store', store, 'confirm', id, '--visibility', 'private'], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error: ${proposals} is a symbolic link, not a directory; the store does not read or write through it`);
    expect(result.stderr).toContain(`hint: replace ${proposals} with a real directory (or move it away)`);
    expect(result.stderr).not.toMatch(/not a regular file|with a regular file/);
  });
});

const asRoot = process.getuid?.() === 0;

/** `pipeline --store STORE ARGS…` as a user permissions stop: nobody when the tests run as root. */
function asUnprivileged(store: string, args: string[]) {
  const { root, bin } = asRoot ? readableCheckout('nobody') : { root: ROOT, bin: BIN };
  const full = [bin, '--store', store, ...args];
  const command = asRoot ? ['runuser', '-u', 'nobody', '--', process.execPath, ...full] : [process.execPath, ...full];
  return spawnSync(command[0]!, command.slice(1), {
    cwd: root,
    env: { ...process.env, PIPELINE_CONFIG_CACHE: 'off', HOME: '/nonexistent', NO_COLOR: '1' },
    encoding: 'utf8',
  });
}

describe('a store this user cannot write', () => {
  it('refuses a write command naming the store and the path, exit 1, and writes nothing', async () => {
    const { store, id } = await storeWithProposal();
    chmodSync(path.dirname(store), 0o755); // mkdtemp makes it 0700
    // Root is not stopped by permissions: it runs the binary as nobody. Anyone else loses write access.
    spawnSync('chmod', ['-R', asRoot ? 'a+rX' : 'a-w', store]);
    const proposal = readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8');
    const result = asUnprivileged(store, ['confirm', id, '--visibility', 'org']);
    if (!asRoot) spawnSync('chmod', ['-R', 'u+w', store]);
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^error: the store at ${store} is not writable here \\(permission denied\\): cannot [a-z]+ (in )?${store}/`));
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8')).toBe(proposal);
  });
});

describe('a store this user cannot read', () => {
  it('says which file it could not read, not that the store is not writable, exit 1', async () => {
    const { store, id } = await storeWithProposal();
    chmodSync(path.dirname(store), 0o755); // mkdtemp makes it 0700
    const file = path.join(store, 'proposals', `${id}.json`);
    spawnSync('chmod', ['-R', 'a+rX', store]);
    chmodSync(file, 0o000);
    const result = asUnprivileged(store, ['list', '--state', 'all']);
    chmodSync(file, 0o644);
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toContain(`error: the store at ${store} is not readable here (permission denied): cannot read ${file}`);
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
  });
});

describe('describing store failures', () => {
  const system = (code: string, syscall: string, file: string) => Object.assign(new Error(`${code}: ${syscall} '${file}'`), { code, syscall, path: file });

  it('says a read-only disk is read-only, naming the store and the directory of a temp file', () => {
    expect(describeFileStoreFailure(system('EROFS', 'mkdir', '/s/.claims'), '/s')?.message).toBe(
      'the store at /s is read-only (read-only file system): cannot create /s/.claims',
    );
    expect(describeFileStoreFailure(system('EROFS', 'open', '/s/.owners/vm.1.a-1.tmp'), '/s')?.message).toBe(
      'the store at /s is read-only (read-only file system): cannot write in /s/.owners/',
    );
    expect(describeFileStoreFailure(system('ENOSPC', 'write', '/s/events.jsonl'), '/s')?.message).toBe(
      'cannot use /s/events.jsonl in the store at /s: no space left on the device',
    );
  });

  it('leaves a failure it does not know (a bug) as it is', () => {
    expect(describeFileStoreFailure(new TypeError('x is undefined'), '/s')).toBeUndefined();
    expect(describeFileStoreFailure(system('EEXIST', 'link', '/s/.index/keys/k'), '/s')).toBeUndefined();
    expect(describePostgresFailure(Object.assign(new Error('duplicate key'), { code: '23505' }), 'postgres://h/db')).toBeUndefined();
  });

  it('names a PostgreSQL server by its shown URL, from a refused connection to every address', () => {
    const refused = Object.assign(new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:1'), { code: 'ECONNREFUSED' })], ''), {});
    expect(describePostgresFailure(refused, 'postgres://localhost:1/db?schema=pipeline')?.message).toBe(
      'cannot connect to the PostgreSQL store at postgres://localhost:1/db?schema=pipeline: connection refused',
    );
  });

  it('turns the failures of every kind of call into the description: a promise, a listing, a thrown error', async () => {
    const failure = system('EROFS', 'open', '/s/events.jsonl');
    const fake = {
      location: '/s',
      async exists() {
        throw failure;
      },
      async *audit() {
        yield* [];
        throw failure;
      },
      read() {
        throw failure;
      },
    };
    const store = withPlainFailures(fake as never, (error) => describeFileStoreFailure(error, '/s')) as typeof fake;
    await expect(store.exists()).rejects.toBeInstanceOf(PipelineError);
    await expect(
      (async () => {
        for await (const _row of store.audit());
      })(),
    ).rejects.toThrow('the store at /s is read-only (read-only file system): cannot write /s/events.jsonl');
    expect(() => store.read()).toThrow(PipelineError);
    expect(store.location).toBe('/s');
  });
});
