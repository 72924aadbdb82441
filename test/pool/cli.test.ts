/**
 * SPEC §5.8 and §7 through the command line (in-process): `pool outcome`, `archive`, `restore`,
 * `top` and `prune` — what each writes, what each prints, and every bad input refused with exit 1,
 * naming what is wrong (and the proposal's status), writing nothing.
 */
import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { poolOf, recordOutcome } from '../../engine/pool/pool.js';
import { runReviewCommand, findReviewCommand } from '../../engine/stages/review.js';
import { proposalInput, proposalJson, tempDir } from '../helpers.js';
import { auditRows, pipelineIn, pool, poolTest, snapshot, type PoolTest } from './helpers.js';

let t: PoolTest;
beforeEach(async () => {
  t = await poolTest();
});

const GATE = { PIPELINE_PRUNE_EXECUTE: '1' };
const entry = (collection: string, id: string) => path.join(t.storeDir, collection, `${id}.json`);

/** Outcomes through the engine's API (the command itself is tested above; this is set-up). */
async function outcomes(id: string, hits: number, misses: number): Promise<void> {
  const config = poolOf(t.pipeline)!;
  for (const [result, count] of [
    ['hit', hits],
    ['miss', misses],
  ] as const) {
    for (let i = 0; i < count; i++) expect((await recordOutcome(t.engine, config, id, result)).kind).toBe('committed');
  }
}

/** Runs `args` and checks it is refused: exit 1, the message matches, and nothing in the store changed. */
async function refusedWritingNothing(args: string[], message: RegExp, env: Record<string, string> = {}): Promise<void> {
  const before = snapshot(t.storeDir);
  const result = await pool(t.storeDir, args, { env });
  expect(result.stderr).toMatch(message);
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  expect(snapshot(t.storeDir)).toEqual(before);
}

describe('pool outcome', () => {
  it('counts on from a counter a hand edit left negative or fractional as the pool ranks it (0): no outcome is lost', async () => {
    for (const bad of [-5, 1.5, '3']) {
      const id = await t.inUse();
      const file = entry('proposals', id);
      writeFileSync(file, `${JSON.stringify({ ...proposalJson(t.storeDir, id), hit_count: bad }, null, 2)}\n`);
      const top = JSON.parse((await pool(t.storeDir, ['top', '--json', '--k', '50'])).stdout) as { id: string; hit_count: number }[];
      expect(top.find((row) => row.id === id)?.hit_count).toBe(0);
      const hit = await pool(t.storeDir, ['outcome', id, 'hit']);
      expect(hit).toMatchObject({ code: 0, stdout: `${id} hit recorded: 1 hit, 0 misses\n` });
      expect(proposalJson(t.storeDir, id)['hit_count']).toBe(1);
    }
  });

  it('refuses --undo of a counter the pool counts as 0 (a hand-made 1.5), as of a 0', async () => {
    const id = await t.inUse();
    writeFileSync(entry('proposals', id), `${JSON.stringify({ ...proposalJson(t.storeDir, id), hit_count: 1.5 }, null, 2)}\n`);
    await refusedWritingNothing(['outcome', id, 'hit', '--undo'], /there is no hit to take back/);
  });

  it('counts hits and misses on the proposal, stamps last_outcome_at, and records result, consumer and session in the audit row', async () => {
    const id = await t.inUse();
    const entryBefore = readFileSync(entry('approved', id));
    const first = await pool(t.storeDir, ['outcome', id, 'hit', '--consumer', 'architect', '--session', 's-42'], { now: '2026-11-02T08:00:00Z' });
    expect(first).toMatchObject({ code: 0, stdout: `${id} hit recorded: 1 hit, 0 misses\n` });
    await pool(t.storeDir, ['outcome', id, 'miss']);
    const proposal = proposalJson(t.storeDir, id);
    expect(proposal).toMatchObject({ status: 'approved', hit_count: 1, miss_count: 1 });
    expect(proposal['last_outcome_at']).toMatch(/Z$/);
    const rows = auditRows(t.storeDir).filter((row) => row['event'] === 'record_outcome');
    expect(rows).toEqual([
      {
        at: '2026-11-02T08:00:00Z',
        id,
        event: 'record_outcome',
        from: 'approved',
        to: 'approved',
        stage: 'pool',
        actor: 'cli',
        args: { result: 'hit', consumer: 'architect', session: 's-42' },
      },
      expect.objectContaining({ args: { result: 'miss' } }),
    ]);
    // The pool entry is not rewritten by outcomes.
    expect(readFileSync(entry('approved', id)).equals(entryBefore)).toBe(true);
  });

  it('--undo takes one back from that counter, recording args.result like the outcome it undoes', async () => {
    const id = await t.inUse();
    await outcomes(id, 2, 1);
    const result = await pool(t.storeDir, ['outcome', id, 'hit', '--undo', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ id, hit_count: 1, miss_count: 1 });
    expect(auditRows(t.storeDir).at(-1)).toMatchObject({ event: 'undo_outcome', from: 'approved', to: 'approved', args: { result: 'hit' } });
  });

  it('refuses --undo when that counter is 0, naming the status and the counter', async () => {
    const id = await t.inUse();
    await outcomes(id, 1, 0);
    await refusedWritingNothing(['outcome', id, 'miss', '--undo'], new RegExp(`${id} \\(approved\\): there is no miss to take back \\(miss_count is 0\\)`));
  });

  it('refuses an unknown result word, quoting it', async () => {
    const id = await t.inUse();
    await refusedWritingNothing(['outcome', id, 'HIT'], new RegExp(`${id} \\(approved\\): unknown result "HIT" \\(expected hit or miss\\)`));
  });

  it('refuses a proposal that is not approved — archived included — naming its status', async () => {
    const pending = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    const pendingId = pending.kind === 'committed' ? pending.id : '';
    await refusedWritingNothing(['outcome', pendingId, 'hit'], /is pending; record_outcome applies only to approved proposals/);
    const id = await t.inUse();
    expect((await pool(t.storeDir, ['archive', id])).code).toBe(0);
    await refusedWritingNothing(['outcome', id, 'hit'], new RegExp(`${id} is archived; record_outcome applies only to approved proposals`));
    await refusedWritingNothing(['outcome', id, 'hit', '--undo'], new RegExp(`${id} is archived; undo_outcome applies only to approved proposals`));
  });

  it('refuses an id that is not a ULID before touching the store, and a missing one as not found', async () => {
    const store = path.join(tempDir(), 'never-made');
    const result = await pool(store, ['outcome', '../../etc/passwd', 'hit']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/invalid id/);
    expect(existsSync(store)).toBe(false);
    await refusedWritingNothing(['outcome', '01JZZZZZZZZZZZZZZZZZZZZZZZ', 'hit'], /not found/);
  });

  it('refuses a blank or oversized --consumer, and options of other subcommands', async () => {
    const id = await t.inUse();
    await refusedWritingNothing(['outcome', id, 'hit', '--consumer', ' '], /--consumer must be 1 to 200 printable characters/);
    await refusedWritingNothing(['outcome', id, 'hit', '--session', 'x'.repeat(201)], /--session must be 1 to 200 printable characters/);
    await refusedWritingNothing(['outcome', id, 'hit', '--k', '3'], /unknown option: --k/);
    await refusedWritingNothing(['outcome', id], /pool outcome: missing hit\|miss/);
  });
});

describe('pool archive and restore', () => {
  it('moves the pool entry to archived/ and back, byte for byte, through archived', async () => {
    const id = await t.inUse();
    const bytes = readFileSync(entry('approved', id));
    const archived = await pool(t.storeDir, ['archive', id]);
    expect(archived).toMatchObject({ code: 0, stdout: `${id} approved → archived\n` });
    expect(existsSync(entry('approved', id))).toBe(false);
    expect(readFileSync(entry('archived', id)).equals(bytes)).toBe(true);
    expect(proposalJson(t.storeDir, id)['status']).toBe('archived');
    const restored = await pool(t.storeDir, ['restore', id]);
    expect(restored).toMatchObject({ code: 0, stdout: `${id} archived → approved\n` });
    expect(readFileSync(entry('approved', id)).equals(bytes)).toBe(true);
    expect(existsSync(entry('archived', id))).toBe(false);
    const moves = auditRows(t.storeDir)
      .slice(-2)
      .map((row) => `${row['event']}:${row['from']}→${row['to']}`);
    expect(moves).toEqual(['archive:approved→archived', 'restore:archived→approved']);
  });

  it('refuses archive of an archived proposal and restore of an approved one, naming the status (no idempotent repeat)', async () => {
    const id = await t.inUse();
    await refusedWritingNothing(['restore', id], new RegExp(`${id} is approved; restore applies only to archived proposals`));
    await pool(t.storeDir, ['archive', id]);
    await refusedWritingNothing(['archive', id], new RegExp(`${id} is archived; archive applies only to approved proposals`));
  });

  it('refuses to archive an approved proposal that has no pool entry yet, writing nothing', async () => {
    const created = await t.engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    const id = created.kind === 'committed' ? created.id : '';
    await runReviewCommand(t.engine, findReviewCommand(t.pipeline, 'confirm')!, id, { visibility: 'private' }, 'cli');
    const read = await t.engine.read(id);
    if (!read.ok) throw new Error('missing');
    await t.engine.applyTo(read.stored, 'approve', { verdict: { passed: true } }, { stage: 'judge', actor: 'cli' });
    await refusedWritingNothing(['archive', id], new RegExp(`${id} \\(approved\\): approved/${id}.json is missing`));
  });

  it('shows archived in status and list like any other state', async () => {
    const id = await t.inUse();
    await t.inUse();
    await pool(t.storeDir, ['archive', id]);
    expect((await pipelineIn(t.storeDir, ['status'])).stdout).toBe('pending 0\nconfirmed 0\npassed 0\napproved 1\nrejected 0\narchived 1\n');
    const listed = await pipelineIn(t.storeDir, ['list', '--state', 'archived']);
    expect(listed.stdout).toBe(`${id}  pnpm 8 refuses lockfiles written by pnpm 7 until they are regenerated\n`);
  });
});

describe('pool top', () => {
  it('ranks by match × recency × hit_weight, prints "<id>  <score>  <hits>/<misses>  <claim>" rows and exact JSON rows', async () => {
    const old = await t.inUse({ stack: ['vite'] }, '2026-05-05T12:00:00Z', 'Vite 5 needs an explicit server.host in containers');
    const fresh = await t.inUse({ stack: ['vite', 'vitest'] }, '2026-11-01T12:00:00Z', 'Vitest 2 reads vite.config by default');
    const other = await t.inUse({ stack: ['pnpm'] }, '2026-11-01T12:00:00Z');
    await outcomes(old, 3, 0);
    const text = await pool(t.storeDir, ['top', '--stack', 'VITE', '--k', '5']);
    expect(text.code).toBe(0);
    // 180 days old with 3 hits: 0.5 × 1.5 = 0.75; fresh and untested: 1.0; pnpm does not match.
    expect(text.stdout).toBe(
      `${fresh}  1.000  0/0  Vitest 2 reads vite.config by default\n` + `${old}  0.750  3/0  Vite 5 needs an explicit server.host in containers\n`,
    );
    const json = JSON.parse((await pool(t.storeDir, ['top', '--stack', 'vite', '--json'])).stdout) as Record<string, unknown>[];
    const keys = ['id', 'score', 'match', 'recency', 'hit_weight', 'hit_count', 'hit_rate', 'miss_count', 'claim', 'visibility', 'applies_to'];
    expect(json.map((row) => Object.keys(row))).toEqual([keys, keys]);
    expect(json[0]).toMatchObject({ id: fresh, score: 1, match: 1, recency: 1, hit_weight: 1, hit_count: 0, hit_rate: null, miss_count: 0 });
    expect(json[0]).toMatchObject({ visibility: 'private' });
    expect(json[1]).toMatchObject({ id: old, match: 1, hit_weight: 1.5, hit_count: 3, hit_rate: 1, miss_count: 0 });
    expect(json[1]!['recency']).toBeCloseTo(0.5, 12);
    expect(other).toBeDefined();
  });

  it('defaults to K = 3 and caps K at 50 with a warning', async () => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await t.inUse());
    const three = await pool(t.storeDir, ['top']);
    expect(three.stdout.trim().split('\n')).toHaveLength(3);
    const many = await pool(t.storeDir, ['top', '--k', '80']);
    expect(many.code).toBe(0);
    expect(many.stderr).toMatch(/warning: --k 80 is more than 50; showing at most 50/);
    expect(many.stdout.trim().split('\n')).toHaveLength(4);
  });

  it('matches --file against the globs and --task against the task kinds; never lists archived proposals', async () => {
    const configs = await t.inUse({ file_patterns: ['vite.config.*'], task_kinds: ['debugging'] });
    const sources = await t.inUse({ file_patterns: ['src/**/*.ts'], task_kinds: ['refactoring'] });
    const ids = async (...args: string[]) => (JSON.parse((await pool(t.storeDir, ['top', '--json', ...args])).stdout) as { id: string }[]).map((row) => row.id);
    expect(await ids('--file', 'apps/web/vite.config.ts')).toEqual([configs]);
    expect(await ids('--file', 'src/deep/a.ts')).toEqual([sources]);
    expect(await ids('--task', 'refactoring')).toEqual([sources]);
    expect(await ids('--file', 'src/a.ts', '--task', 'debugging')).toEqual([sources, configs].sort().reverse());
    await pool(t.storeDir, ['archive', sources]);
    expect(await ids()).toEqual([configs]);
  });

  it('refuses a --k that is not a positive integer, a glob given as --file and an empty --stack, writing nothing', async () => {
    await t.inUse();
    for (const k of ['0', 'three', '1.5', '-2']) {
      await refusedWritingNothing(['top', `--k=${k}`], new RegExp(`--k must be a whole number of 1 or more, got "${k.replace('.', '\\.')}"`));
    }
    await refusedWritingNothing(['top', '--file', 'src/**/*.ts'], /--file "src\/\*\*\/\*\.ts": it is a glob, not a path/);
    await refusedWritingNothing(['top', '--stack', ' , '], /--stack needs at least one name/);
    await refusedWritingNothing(['top', '--undo'], /unknown option: --undo/);
  });

  it('writes nothing to the store but its derived cache, and prints [] when nothing matches', async () => {
    await t.inUse({ stack: ['vite'] });
    const before = snapshot(t.storeDir);
    const none = await pool(t.storeDir, ['top', '--stack', 'django', '--json']);
    expect(none).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(snapshot(t.storeDir)).toEqual(before);
    expect(readdirSync(path.join(t.storeDir, 'cache')).length).toBeGreaterThan(0);
  });

  it('creates nothing in a store that was never written (no index is kept there)', async () => {
    const store = path.join(tempDir(), 'never-made');
    expect(await pool(store, ['top', '--json'])).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(await pool(store, ['prune', '--json'])).toMatchObject({ code: 0, stdout: '{\n  "candidates": [],\n  "archived": []\n}\n' });
    expect(existsSync(store)).toBe(false);
  });

  it('--rebuild rebuilds the index and ranks the same', async () => {
    for (let i = 0; i < 3; i++) await t.inUse();
    const first = await pool(t.storeDir, ['top']);
    expect(await pool(t.storeDir, ['top', '--rebuild'])).toEqual(first);
  });
});

describe('pool prune', () => {
  async function losers(): Promise<string[]> {
    const a = await t.inUse();
    const b = await t.inUse();
    const c = await t.inUse();
    const d = await t.inUse();
    const e = await t.inUse();
    await outcomes(a, 1, 4); // 0.2, 5 outcomes
    await outcomes(b, 0, 5); // 0.0, 5
    await outcomes(c, 1, 5); // 0.167, 6
    await outcomes(d, 2, 3); // 0.4: not a candidate
    await outcomes(e, 1, 3); // 4 outcomes: not enough signal
    await outcomes(await t.inUse(), 0, 0);
    return [b, c, a];
  }

  it('is a dry run by default: lists the candidates, lowest hit rate first, and writes nothing', async () => {
    const order = await losers();
    const before = snapshot(t.storeDir);
    const text = await pool(t.storeDir, ['prune']);
    expect(text.code).toBe(0);
    const rows = text.stdout
      .trim()
      .split('\n')
      .map((line) => line.split('  ').slice(0, 3).join('  '));
    expect(rows).toEqual([`${order[0]}  0.000  0/5`, `${order[1]}  0.167  1/5`, `${order[2]}  0.200  1/4`]);
    expect(text.stderr).toMatch(/3 candidates; a dry run, nothing was archived/);
    const json = JSON.parse((await pool(t.storeDir, ['prune', '--json'])).stdout);
    expect(json).toEqual({
      candidates: [
        { id: order[0], hit_count: 0, miss_count: 5, hit_rate: 0 },
        { id: order[1], hit_count: 1, miss_count: 5, hit_rate: 1 / 6 },
        { id: order[2], hit_count: 1, miss_count: 4, hit_rate: 0.2 },
      ],
      archived: [],
    });
    expect(snapshot(t.storeDir)).toEqual(before);
  });

  it('refuses --execute (and --execute --plan-only) without PIPELINE_PRUNE_EXECUTE=1, naming the variable', async () => {
    await losers();
    await refusedWritingNothing(['prune', '--execute'], /runs only with PIPELINE_PRUNE_EXECUTE=1/);
    await refusedWritingNothing(['prune', '--execute', '--plan-only'], /runs only with PIPELINE_PRUNE_EXECUTE=1/);
    await refusedWritingNothing(['prune', '--execute'], /runs only with PIPELINE_PRUNE_EXECUTE=1/, { PIPELINE_PRUNE_EXECUTE: 'yes' });
    await refusedWritingNothing(['prune', '--plan-only'], /--plan-only goes with --execute/, GATE);
    await refusedWritingNothing(['prune', '--execute', '--max-archive', '0'], /--max-archive must be a whole number of 1 or more/, GATE);
  });

  it('--execute where its receipt cannot be written (a link where the receipts go) archives nothing: refused first, naming it', async () => {
    await losers();
    const outside = tempDir('pipeline-outside-');
    symlinkSync(outside, path.join(t.storeDir, 'prune-receipts'));
    await refusedWritingNothing(['prune', '--execute'], /prune-receipts is a symbolic link, not a directory/, GATE);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('--execute --plan-only says what it would archive and writes nothing', async () => {
    const order = await losers();
    const before = snapshot(t.storeDir);
    const result = await pool(t.storeDir, ['prune', '--execute', '--plan-only', '--max-archive', '2', '--json'], { env: GATE });
    expect(JSON.parse(result.stdout).archived).toEqual(order.slice(0, 2));
    expect(snapshot(t.storeDir)).toEqual(before);
  });

  it('--execute archives at most --max-archive (default 3) and writes a receipt; every archive can be restored', async () => {
    const order = await losers();
    const result = await pool(t.storeDir, ['prune', '--execute', '--max-archive', '2', '--json'], { env: GATE, now: '2026-12-01T00:00:00Z' });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ archived: order.slice(0, 2) });
    const receipts = readdirSync(path.join(t.storeDir, 'prune-receipts'));
    expect(receipts).toEqual(['2026-12-01T00:00:00Z.json']);
    expect(JSON.parse(readFileSync(path.join(t.storeDir, 'prune-receipts', receipts[0]!), 'utf8'))).toEqual({
      at: '2026-12-01T00:00:00Z',
      min_outcomes: 5,
      max_hit_rate: 0.3,
      max_archive: 2,
      candidates: order,
      archived: order.slice(0, 2),
    });
    expect(readdirSync(path.join(t.storeDir, 'archived')).sort()).toEqual(
      order
        .slice(0, 2)
        .map((id) => `${id}.json`)
        .sort(),
    );
    expect(
      auditRows(t.storeDir)
        .filter((row) => row['event'] === 'archive')
        .map((row) => row['args']),
    ).toEqual([{ reason: 'prune' }, { reason: 'prune' }]);
    // The second run in the same second gets its own receipt; default max 3 takes the last candidate.
    const again = await pool(t.storeDir, ['prune', '--execute', '--json'], { env: GATE, now: '2026-12-01T00:00:00Z' });
    expect(JSON.parse(again.stdout).archived).toEqual([order[2]]);
    expect(readdirSync(path.join(t.storeDir, 'prune-receipts')).sort()).toEqual(['2026-12-01T00:00:00Z-2.json', '2026-12-01T00:00:00Z.json']);
    for (const id of order) expect((await pool(t.storeDir, ['restore', id])).code).toBe(0);
    expect(readdirSync(path.join(t.storeDir, 'archived'))).toEqual([]);
  });
});

describe('pool prune --execute with nothing to prune', () => {
  it('still writes a receipt (the run is on record) and archives nothing', async () => {
    await t.inUse();
    const result = await pool(t.storeDir, ['prune', '--execute', '--json'], { env: GATE, now: '2026-12-02T00:00:00Z' });
    expect(result).toMatchObject({ code: 0 });
    expect(JSON.parse(result.stdout)).toEqual({ candidates: [], archived: [] });
    const receipt = JSON.parse(readFileSync(path.join(t.storeDir, 'prune-receipts', '2026-12-02T00:00:00Z.json'), 'utf8'));
    expect(receipt).toEqual({ at: '2026-12-02T00:00:00Z', min_outcomes: 5, max_hit_rate: 0.3, max_archive: 3, candidates: [], archived: [] });
  });
});

describe('the pool command', () => {
  it('refuses an unknown subcommand with a hint, and no subcommand with the usage', async () => {
    const unknown = await pool(t.storeDir, ['tpo']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/pool: unknown subcommand "tpo"[\s\S]*did you mean "top"\?/);
    const none = await pool(t.storeDir, []);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/usage: pipeline pool top/);
  });
});
