/**
 * SPEC §11: `store copy` lands whole or not at all. A source it cannot copy — two proposals for one
 * key, as a hand-made copy of a proposal file gives — is exit 1 naming the key and the proposals'
 * ids, and the destination is left as it was (missing, or empty), so the same command runs again
 * once the source is fixed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runIn } from '../cli/memory-io.js';
import { freshSchemaUrl, PG_URL } from '../pg/database.js';
import { proposalInput, SECRET_FILE, tempDir } from '../helpers.js';

const env = () => ({ PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! });
const COPY = '01M8T33A99WYB4PAQ425EVPZZZ';

/** A store of two proposals, and a hand-made copy of the first under another id (the same key). */
async function storeWithDuplicateKey(): Promise<{ store: string; ids: string[]; key: string }> {
  const store = path.join(tempDir('pipeline-copy-'), 'store');
  const ids: string[] = [];
  const inputs = [proposalInput(), proposalInput()];
  for (const input of inputs) {
    const made = await runIn(['--store', store, 'propose', '-'], env(), { input: JSON.stringify(input) });
    expect(made.code, made.stderr).toBe(0);
    ids.push(made.stdout.trim());
  }
  const text = readFileSync(path.join(store, 'proposals', `${ids[0]}.json`), 'utf8');
  writeFileSync(path.join(store, 'proposals', `${COPY}.json`), text.replaceAll(ids[0]!, COPY));
  return { store, ids, key: inputs[0]!.artifact_id };
}

function expectDuplicateReported(stderr: string, store: string, ids: string[], key: string): void {
  expect(stderr).toContain(`key "${key}" is held by 2 proposals: ${[ids[0]!, COPY].sort().join(', ')}`);
  expect(stderr).toContain(`error: ${store} holds more than one proposal for a key; a store holds one per key, so nothing was copied`);
  expect(stderr).not.toMatch(/EEXIST|internal error/);
}

describe('store copy of a store holding two proposals for one key', () => {
  it('names the key and both proposals, creates no destination, and copies once the extra file is gone', async () => {
    const { store, ids, key } = await storeWithDuplicateKey();
    const parent = tempDir('pipeline-copy-to-');
    const to = path.join(parent, 'copy');
    const refused = await runIn(['store', 'copy', '--from', store, '--to', to], env());
    expect(refused.code).toBe(1);
    expectDuplicateReported(refused.stderr, store, ids, key);
    // Nothing half-filled: no destination, and nothing left beside it.
    expect(readdirSync(parent)).toEqual([]);

    unlinkSync(path.join(store, 'proposals', `${COPY}.json`));
    const again = await runIn(['store', 'copy', '--from', store, '--to', to], env());
    expect(again.code, again.stderr).toBe(0);
    expect(readdirSync(path.join(to, 'proposals')).sort()).toEqual(ids.map((id) => `${id}.json`).sort());
    expect(readFileSync(path.join(to, 'events.jsonl'), 'utf8')).toBe(readFileSync(path.join(store, 'events.jsonl'), 'utf8'));
    expect(readdirSync(parent)).toEqual(['copy']);
  });

  it('leaves an empty destination directory empty', async () => {
    const { store, ids, key } = await storeWithDuplicateKey();
    const to = path.join(tempDir('pipeline-copy-to-'), 'copy');
    mkdirSync(to);
    const refused = await runIn(['store', 'copy', '--from', store, '--to', to], env());
    expect(refused.code).toBe(1);
    expectDuplicateReported(refused.stderr, store, ids, key);
    expect(readdirSync(to)).toEqual([]);
    expect(readdirSync(path.dirname(to))).toEqual(['copy']);
  });

  it.skipIf(!PG_URL)('leaves a PostgreSQL destination empty, so the copy can be run again', async () => {
    const { store, ids, key } = await storeWithDuplicateKey();
    const url = freshSchemaUrl('copydup');
    const refused = await runIn(['store', 'copy', '--from', store, '--to', url], env());
    expect(refused.code).toBe(1);
    expectDuplicateReported(refused.stderr, store, ids, key);
    unlinkSync(path.join(store, 'proposals', `${COPY}.json`));
    const again = await runIn(['store', 'copy', '--from', store, '--to', url, '--json'], env());
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ same: true, copied: { proposals: 2 } });
  });
});

describe('store copy into a directory', () => {
  it('fills an empty directory that exists, and refuses one that is not empty, writing nothing', async () => {
    const from = path.join(tempDir('pipeline-copy-'), 'store');
    const made = await runIn(['--store', from, 'propose', '-'], env(), { input: JSON.stringify(proposalInput()) });
    expect(made.code, made.stderr).toBe(0);
    const to = path.join(tempDir('pipeline-copy-to-'), 'copy');
    mkdirSync(to);
    const copied = await runIn(['store', 'copy', '--from', from, '--to', to], env());
    expect(copied.code, copied.stderr).toBe(0);
    expect(existsSync(path.join(to, 'proposals', `${made.stdout.trim()}.json`))).toBe(true);

    const full = path.join(tempDir('pipeline-copy-to-'), 'full');
    mkdirSync(full);
    writeFileSync(path.join(full, 'notes.txt'), 'mine\n');
    const refused = await runIn(['store', 'copy', '--from', from, '--to', full], env());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error: ${full} is not empty; store copy only fills an empty store (nothing was written)`);
    expect(readdirSync(full)).toEqual(['notes.txt']);
    expect(readdirSync(path.dirname(full))).toEqual(['full']);
  });
});

describe('store copy of a store holding a file it cannot take whole', () => {
  it('names a proposal file past any proposal’s size and a link where a pool entry belongs, and copies nothing', async () => {
    const from = path.join(tempDir('pipeline-copy-'), 'store');
    const made = await runIn(['--store', from, 'propose', '-'], env(), { input: JSON.stringify(proposalInput()) });
    expect(made.code, made.stderr).toBe(0);
    const huge = path.join(from, 'proposals', `${COPY}.json`);
    writeFileSync(huge, `{"id": "${COPY}", "status": "pending", "padding": "${'x'.repeat(17 * 1024 * 1024)}"}\n`);
    const to = path.join(tempDir('pipeline-copy-to-'), 'copy');
    const refused = await runIn(['store', 'copy', '--from', from, '--to', to], env());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error: ${huge} cannot be copied whole (larger than 16 MiB), so nothing was copied`);
    expect(existsSync(to)).toBe(false);
    expect(readdirSync(path.dirname(to))).toEqual([]);

    unlinkSync(huge);
    mkdirSync(path.join(from, 'approved'), { recursive: true });
    const outside = path.join(tempDir('pipeline-outside-'), 'entry.json');
    writeFileSync(outside, '{}\n');
    const link = path.join(from, 'approved', `${COPY}.json`);
    symlinkSync(outside, link);
    const linked = await runIn(['store', 'copy', '--from', from, '--to', to], env());
    expect(linked.code).toBe(1);
    expect(linked.stderr).toContain(`error: ${link} cannot be copied whole (a symbolic link), so nothing was copied`);
    expect(existsSync(to)).toBe(false);

    unlinkSync(link);
    const again = await runIn(['store', 'copy', '--from', from, '--to', to], env());
    expect(again.code, again.stderr).toBe(0);
  });
});
