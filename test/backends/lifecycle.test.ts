/**
 * SPEC §4 and §11: every command, outcome, message and exit code is the same on every backend.
 * The same command-line session — propose, review (with a pass taken back), judge, promote,
 * refusals, an external verdict, the pool's outcomes, ranking, archive, restore and an executed
 * prune — runs through `main()` against a file store and against PostgreSQL, and both end with the same
 * proposals, audit log, ledgers and pool; `store copy` moves a store between them exactly.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../engine/store/open.js';
import type { Dumped, Store } from '../../engine/store/types.js';
import { runIn } from '../cli/memory-io.js';
import { freshSchemaUrl, PG_URL } from '../pg/database.js';
import { proposalInput, SECRET_FILE, shippedPipeline, tempDir } from '../helpers.js';

const opened: Store[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});

async function dump(location: string): Promise<Dumped[]> {
  const store = openStore(await shippedPipeline(), location);
  opened.push(store);
  const items: Dumped[] = [];
  for await (const item of store.dump()) items.push(item);
  return items;
}

/** The same session on a store; returns what a reader of the command line saw. */
async function session(location: string) {
  const env = { PIPELINE_STORE: location, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! };
  const cli = (...args: string[]) => runIn(args, env);
  const seen: Record<string, unknown> = {};
  const ids: string[] = [];
  for (const input of [proposalInput(), proposalInput(), proposalInput({ claim: 'pnpm 8 might refuse old lockfiles' }), proposalInput()]) {
    const created = await runIn(['propose', '-'], env, { input: JSON.stringify(input) });
    expect(created.code, created.stderr).toBe(0);
    ids.push(created.stdout.trim());
  }
  const [a, b, c, d] = ids as [string, string, string, string];
  const before = (await cli('show', b, '--json')).stdout;
  expect((await cli('confirm', a, '--visibility', 'org')).code).toBe(0);
  expect((await cli('confirm', b, '--visibility', 'public', '--version-independent', 'It holds for every release of the tool')).code).toBe(0);
  expect((await cli('unconfirm', b)).code).toBe(0);
  seen['unconfirm restores the bytes'] = (await cli('show', b, '--json')).stdout === before;
  expect((await cli('confirm', b, '--visibility', 'public')).code).toBe(0);
  expect((await cli('confirm', c, '--visibility', 'org')).code).toBe(0);
  expect((await cli('pass', d, 'not worth sharing')).code).toBe(0);
  const refused = await cli('pass', a, 'too late');
  seen['refusal'] = [refused.code, refused.stderr.replace(a, '<a>').trim()];
  const judged = await cli('run', 'judge', '--yes', '--json');
  expect(judged.code, judged.stderr).toBe(0);
  seen['judge summary'] = JSON.parse(judged.stdout);
  const again = await cli('promote', a);
  seen['promote again'] = [again.code, again.stdout.replace(a, '<a>').trim()];
  seen['approved'] = (JSON.parse((await cli('list', '--state', 'approved', '--json')).stdout) as { id: string }[]).map((proposal) => ids.indexOf(proposal.id));
  const rejudge = await cli('judge', a, '--verdicts', '-');
  seen['re-judge'] = [rejudge.code, rejudge.stderr.replace(a, '<a>').trim()];
  // A pass taken back and given again (SPEC §5.3).
  const unpassed = await cli('unpass', d);
  seen['unpass'] = [unpassed.code, (await cli('show', d, '--json')).stdout.includes('"status": "pending"')];
  expect((await cli('pass', d, 'still not worth sharing')).code).toBe(0);
  // The pool in use (SPEC §5.8): outcomes and their undo, the ranking, archive and restore, an executed prune's receipt.
  seen['outcomes'] = [];
  for (const words of [['hit'], ['hit'], ['miss'], ['miss', '--undo']]) (seen['outcomes'] as number[]).push((await cli('pool', 'outcome', a, ...words)).code);
  const top = JSON.parse((await cli('pool', 'top', '--k', '5', '--json')).stdout) as { id: string; hit_count: number; miss_count: number }[];
  seen['top'] = top.map((row) => [ids.indexOf(row.id), row.hit_count, row.miss_count]);
  seen['archive'] = (await cli('pool', 'archive', b)).code;
  seen['restore'] = (await cli('pool', 'restore', b)).code;
  seen['archive again'] = (await cli('pool', 'archive', b)).code;
  const notApproved = await cli('pool', 'outcome', c, 'hit');
  seen['outcome refused'] = [notApproved.code, notApproved.stderr.replace(c, '<c>').trim()];
  const prune = await runIn(['pool', 'prune', '--execute', '--json'], { ...env, PIPELINE_PRUNE_EXECUTE: '1' });
  expect(prune.code, prune.stderr).toBe(0);
  seen['status'] = JSON.parse((await cli('status', '--json')).stdout);
  return { ids, seen };
}

/**
 * What a store holds, with this session's ids and clock readings put aside. A run commits its
 * proposals concurrently, so rows are compared per proposal, in each proposal's own order.
 */
function normalized(items: Dumped[], ids: string[]): unknown[] {
  const name = (text: string) =>
    ids
      .reduce((out, id, index) => out.split(id).join(`<${index}>`), text)
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '<time>')
      .replace(/01JBQ\d{21}/g, '<artifact>')
      .replace(/\\"author_key\\": \\"[0-9a-f]{32}\\"/g, '<key>');
  const texts = items.map((item) => name(JSON.stringify(item)));
  const group = (text: string) => `${(JSON.parse(text) as { kind: string }).kind}\u0000${/<(\d)>/.exec(text)?.[1] ?? ''}`;
  const order = texts.map((text, index) => ({ text, index, group: group(text) }));
  order.sort((x, y) => (x.group < y.group ? -1 : x.group > y.group ? 1 : x.index - y.index));
  return order.map((entry) => JSON.parse(entry.text) as unknown);
}

describe.skipIf(!PG_URL)('one command-line session, on every backend', () => {
  it('gives the same outputs, exit codes and store contents on files and on PostgreSQL', async () => {
    const dir = path.join(tempDir('pipeline-backend-'), 'store');
    const url = freshSchemaUrl('session');
    const files = await session(dir);
    const database = await session(url);
    expect(database.seen).toEqual(files.seen);
    expect(files.seen['unconfirm restores the bytes']).toBe(true);
    expect(files.seen['status']).toEqual({ pending: 0, confirmed: 0, passed: 1, approved: 1, rejected: 1, archived: 1 });
    expect(files.seen['unpass']).toEqual([0, true]);
    expect(files.seen['outcomes']).toEqual([0, 0, 0, 0]);
    expect(files.seen['top']).toContainEqual([0, 2, 0]);
    expect([files.seen['archive'], files.seen['restore'], files.seen['archive again']]).toEqual([0, 0, 0]);
    expect((files.seen['outcome refused'] as [number, string])[0]).toBe(1);
    expect(normalized(await dump(url), database.ids)).toEqual(normalized(await dump(dir), files.ids));
  }, 120_000);

  it('copies a store file → PostgreSQL → file exactly, and refuses a destination that is not empty', async () => {
    const dir = path.join(tempDir('pipeline-backend-'), 'store');
    await session(dir);
    const url = freshSchemaUrl('copy');
    const back = path.join(tempDir('pipeline-backend-'), 'store');
    const env = { PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! };
    const there = await runIn(['store', 'copy', '--from', dir, '--to', url, '--json'], env);
    expect(there.code, there.stderr).toBe(0);
    // Archived entries and an executed prune's receipt travel too (SPEC §11: everything but the cache).
    const copied = { proposals: 4, audit: 25, ledgers: { declined: 1, passed: 3 }, entries: { approved: 1, archived: 1 }, documents: { 'prune-receipts': 1 } };
    expect(JSON.parse(there.stdout)).toMatchObject({ same: true, copied, found: copied });
    const home = await runIn(['store', 'copy', '--from', url, '--to', back], env);
    expect(home.code, home.stderr).toBe(0);
    expect(home.stdout).toContain('checked: the destination holds exactly these counts');
    expect(await dump(back)).toEqual(await dump(dir));
    const refused = await runIn(['store', 'copy', '--from', dir, '--to', url], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('is not empty; store copy only fills an empty store (nothing was written)');
  }, 120_000);
});
