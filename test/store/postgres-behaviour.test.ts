/**
 * SPEC §11 on a real PostgreSQL server: the promises of the PostgreSQL store that only show while
 * work is in flight or the database misbehaves. Leases are renewed while a judge call runs (a second
 * worker meanwhile does not take the proposal over); no transaction is open during the call; a
 * serialization failure or a deadlock on a commit is retried, anything else is not; concurrent
 * first opens migrate once; and a `store:` URL in pipeline.yaml (under PIPELINE_STORE and --store)
 * is the store commands use.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { monotonicFactory } from 'ulid';
import { describe, expect, it } from 'vitest';
import { groupedCommits, parsePostgresUrl, SCHEMA_VERSION } from '../../engine/store/postgres-store.js';
import type { AuditRow, Change, CommitResult, Dumped, Store } from '../../engine/store/types.js';
import { runIn } from '../cli/memory-io.js';
import { copyPipeline, proposalInput, SECRET_FILE } from '../helpers.js';
import { start, storeEnv } from '../torture/harness.js';
import { freshSchemaUrl, PG_URL } from '../pg/database.js';
import { postgresStores } from './postgres-open.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const open = postgresStores();

/** A plain client on the test server (the schema's tables, pg_stat_activity), closed after `use`. */
async function sql<T>(use: (query: (text: string, values?: unknown[]) => Promise<Record<string, any>[]>) => Promise<T>): Promise<T> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'pipeline-test-observer' });
  await client.connect();
  try {
    return await use(async (text, values = []) => (await client.query(text, values)).rows as Record<string, any>[]);
  } finally {
    await client.end();
  }
}

const schemaOf = (url: string) => parsePostgresUrl(url).schema;

/**
 * The shipped pipeline with both judges one command that records each call, then waits for a gate
 * file before answering a passing verdict — a model call that lasts as long as the test wants —
 * and leases of `ttl`.
 */
function gatedPipeline(ttl: string): { dir: string; calls: string; gate: string } {
  const dir = copyPipeline();
  const verdict = path.join(dir, 'verdict.json');
  const calls = path.join(dir, 'calls');
  const gate = path.join(dir, 'gate');
  writeFileSync(
    verdict,
    JSON.stringify({ score: 0.9, passed: true, criterion_scores: { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 1 } }),
  );
  const main = path.join(dir, 'pipeline.yaml');
  const command = `sh -c 'echo call >> ${calls}; while [ ! -e ${gate} ]; do sleep 0.05; done; cat ${verdict}'`;
  writeFileSync(
    main,
    readFileSync(main, 'utf8')
      .replace('providers:\n', `providers:\n  gated:\n    kind: command\n    command: "${command}"\n    paid: false\n`)
      .replace(/defaults:\n/, `defaults:\n  claim_ttl: ${ttl}\n`),
  );
  const judge = path.join(dir, 'stages', 'judge.yaml');
  writeFileSync(
    judge,
    readFileSync(judge, 'utf8').replace('standard: standard-checks', 'standard: gated').replace('adversarial: adversarial-checks', 'adversarial: gated'),
  );
  return { dir, calls, gate };
}

const callsMade = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);

/** One proposal confirmed for an org jury, in the store `url` of the pipeline in `dir`. */
async function confirmedProposal(dir: string, url: string): Promise<string> {
  const env = { PIPELINE_STORE: url, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! };
  const created = await runIn(['--dir', dir, 'propose', '-'], env, { input: JSON.stringify(proposalInput()) });
  expect(created.code, created.stderr).toBe(0);
  const id = created.stdout.trim();
  const confirmed = await runIn(['--dir', dir, 'confirm', id, '--visibility', 'org'], env);
  expect(confirmed.code, confirmed.stderr).toBe(0);
  return id;
}

async function auditOf(store: Store, id: string): Promise<AuditRow[]> {
  const rows: AuditRow[] = [];
  for await (const row of store.audit({ id })) rows.push(row);
  return rows;
}

const verdictRows = (rows: AuditRow[]) => rows.filter((row) => row.event === 'approve' || row.event === 'reject');

/**
 * Start `pipeline run judge` (the binary, a worker process of its own) on the gated pipeline and
 * wait until its first judge call is in flight (the proposal is leased, the call has not answered).
 */
async function judgeInFlight(ttl: string, url: string) {
  const { dir, calls, gate } = gatedPipeline(ttl);
  const id = await confirmedProposal(dir, url);
  const env = storeEnv(url);
  const run = () => start(['--dir', dir, 'run', 'judge', '--yes', '--json'], env).done;
  const first = run();
  let ended = false;
  void first.finally(() => (ended = true));
  while (callsMade(calls) === 0) {
    if (ended) throw new Error(`the run ended before its judge call: ${JSON.stringify(await first)}`);
    await sleep(20);
  }
  return { id, dir, calls, first, run, open: () => writeFileSync(gate, '') };
}

describe.skipIf(!PG_URL)('PostgreSQL store while work is in flight (SPEC §11)', () => {
  it('renews a 1 s lease while a judge call runs several lease lengths: a second worker does not take the proposal over, and it is judged once', async () => {
    const url = freshSchemaUrl('renew');
    const flight = await judgeInFlight('1s', url);
    // For two lease lengths into the call, and on through a second worker's run, another claim gets nothing.
    const store = open(url);
    for (let probe = 0; probe < 10; probe++) {
      expect(await store.claim('judge', { query: { status: 'confirmed' } }, 10, 1000)).toEqual({ leases: [] });
      await sleep(200);
    }
    expect(await store.held('judge', { keys: [flight.id] })).toEqual([flight.id]);
    // A second worker meanwhile finds the proposal held by a live run: it calls no judge and says so.
    const second = await flight.run();
    expect(second.code, second.stderr).toBe(2);
    expect(JSON.parse(second.stdout).counts).toMatchObject({ approved: 0, rejected: 0, held_by_another_run: 1 });
    expect(second.stderr).toContain(`${flight.id}: another run still holds it`);
    const calledByFirst = callsMade(flight.calls);
    flight.open();
    const first = await flight.first;
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).counts).toMatchObject({ approved: 1 });
    // Both jurors were asked once, by the first worker only; one verdict row.
    expect(calledByFirst).toBeLessThanOrEqual(2);
    expect(callsMade(flight.calls)).toBe(2);
    expect(verdictRows(await auditOf(store, flight.id)).map((row) => row.event)).toEqual(['approve']);
  }, 30_000);

  it('keeps an answer without waiting for a log flush, and leaves every session it used committing synchronously', async () => {
    const store = open(freshSchemaUrl('cache_async'));
    await Promise.all(Array.from({ length: 12 }, (_, i) => store.cache.put(`answer ${i}`, { text: `verdict ${i}` })));
    for (let i = 0; i < 12; i++) expect(await store.cache.get(`answer ${i}`)).toEqual({ text: `verdict ${i}` });
    // The puts ran on up to four pooled sessions at once; each of them, held at the same time
    // here, still commits synchronously — the setting was the put's transaction's alone.
    const query = (store as unknown as { query(text: string): Promise<{ rows: { setting: string }[] }> }).query.bind(store);
    const held = await Promise.all(Array.from({ length: 4 }, () => query(`SELECT current_setting('synchronous_commit') AS setting, pg_sleep(0.1)`)));
    expect(held.map(({ rows }) => rows[0]!.setting)).toEqual(['on', 'on', 'on', 'on']);
  });

  it('holds no transaction open while a judge call runs', async () => {
    // The store's connections carry this application_name (a URL parameter), so only they are watched.
    const application = `pipeline_${Date.now().toString(36)}`;
    const url = `${freshSchemaUrl('idle')}&application_name=${application}`;
    const flight = await judgeInFlight('1s', url);
    const states: string[] = [];
    // Watch the store's sessions through several renewals of the lease while the call is in flight.
    await sql(async (query) => {
      for (let sample = 0; sample < 40; sample++) {
        const rows = await query('SELECT state FROM pg_stat_activity WHERE application_name = $1', [application]);
        states.push(...rows.map((row) => String(row['state'])));
        await sleep(50);
      }
    });
    flight.open();
    const first = await flight.first;
    expect(first.code, first.stderr).toBe(0);
    // The watch saw the store's sessions (the filter is not empty), and none of them inside a transaction.
    expect(states.length).toBeGreaterThan(0);
    expect(states.filter((state) => state.startsWith('idle in transaction'))).toEqual([]);
  }, 30_000);
});

/** Make the commit transactions of the schema of `url` fail: inserting an audit row raises `code` the first `times` times. */
async function injectFault(url: string, code: string, times: number, when: 'at commit' | 'at once'): Promise<void> {
  const schema = schemaOf(url);
  await sql(async (query) => {
    // A sequence counts the attempts: unlike a table, it is not rolled back with the failed transaction.
    await query(`CREATE SEQUENCE "${schema}".fault_hits`);
    await query(`CREATE FUNCTION "${schema}".fault() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval(TG_TABLE_SCHEMA || '.fault_hits') <= TG_ARGV[1]::int THEN
          RAISE EXCEPTION 'injected failure %', TG_ARGV[0] USING ERRCODE = TG_ARGV[0];
        END IF;
        RETURN NULL;
      END $$`);
    const trigger = when === 'at commit' ? 'CONSTRAINT TRIGGER fault AFTER INSERT' : 'TRIGGER fault AFTER INSERT';
    const deferred = when === 'at commit' ? 'DEFERRABLE INITIALLY DEFERRED' : '';
    await query(`CREATE ${trigger} ON "${schema}".audit ${deferred} FOR EACH ROW EXECUTE FUNCTION "${schema}".fault('${code}', '${times}')`);
  });
}

const faultHits = (url: string) => sql(async (query) => Number((await query(`SELECT last_value FROM "${schemaOf(url)}".fault_hits`))[0]!['last_value']));

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FA1';
const createAudit: AuditRow = { at: '2026-11-01T00:00:00Z', id: ID, event: 'create', from: null, to: 'confirmed', stage: 't', actor: 'cli' };
const judgeAudit: AuditRow = { at: '2026-11-01T00:00:01Z', id: ID, event: 'approve', from: 'confirmed', to: 'approved', stage: 'judge', actor: 'cli' };

describe.skipIf(!PG_URL)('PostgreSQL store claims at any queue length (SPEC §11)', () => {
  it('reads the rows a claim leases in index order, never sorting every match (a claim of 4 from 300 touches a handful)', async () => {
    const store = open(freshSchemaUrl('pick'));
    const next = monotonicFactory();
    // A queue as `store copy` leaves it (which gives the planner its statistics at once).
    async function* copied(): AsyncIterable<Dumped> {
      for (let i = 0; i < 300; i++) {
        const id = next();
        yield { kind: 'proposal', id, key: `k${i}`, text: `${JSON.stringify({ id, status: 'confirmed', claim: 'x'.repeat(3000) })}\n` };
      }
    }
    await store.load(copied());
    // The claim's statement as the store sends it, run again under EXPLAIN ANALYZE and rolled back.
    const pg = (await import('pg')).default;
    const sent: { text: string; values: unknown[] }[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: unknown, ...args: any[]) {
      if (typeof args[0] === 'string' && args[0].includes('picked')) sent.push({ text: args[0], values: args[1] });
      return (query as any).apply(this, args);
    } as typeof query;
    try {
      expect((await store.claim('judge', { query: { status: 'confirmed' } }, 4, 60_000)).leases).toHaveLength(4);
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(sent).toHaveLength(1);
    const plan = await sql(async (run) => {
      await run('BEGIN');
      try {
        return (await run(`EXPLAIN (ANALYZE, FORMAT JSON) ${sent[0]!.text}`, sent[0]!.values))[0]!['QUERY PLAN'][0].Plan;
      } finally {
        await run('ROLLBACK');
      }
    });
    const nodes: Record<string, any>[] = [];
    const walk = (node: Record<string, any>) => {
      nodes.push(node);
      for (const child of node['Plans'] ?? []) walk(child);
    };
    walk(plan);
    const scans = nodes.filter((node) => node['Relation Name'] === 'proposals');
    expect(nodes.filter((node) => node['Node Type'] === 'Sort')).toEqual([]);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) expect(scan['Actual Rows'] * scan['Actual Loops']).toBeLessThanOrEqual(20);
  }, 30_000);

  it('finds a commit’s lease and its `once` ledger rows by index however empty the tables were when the commit was planned', async () => {
    // A commit's plan is made once per connection (a generic plan), on its first use — in a store
    // just copied in (`store copy` takes statistics at once) or just analyzed by autovacuum, while
    // the leases and the ledger are empty (or small) and a scan of them looks cheapest. That plan
    // then scanned the whole ledger for every `once` row as it grew (2,000 commits read 80,000
    // ledger rows), and every lease, until new statistics replaced it.
    const url = freshSchemaUrl('commit_plan');
    const schema = schemaOf(url);
    const store = open(url);
    const next = monotonicFactory();
    const ids = Array.from({ length: 40 }, () => next());
    const versions = new Map<string, string>();
    for (const [i, id] of ids.entries()) {
      const created = await store.create({ proposal: { id, status: 'confirmed' }, key: `plan-${i}`, audit: { ...createAudit, id, to: 'confirmed' } });
      if (!created.ok) throw new Error(`create ${id}: ${JSON.stringify(created)}`);
      versions.set(id, created.version);
    }
    await sql((run) => run(`ANALYZE "${schema}".leases, "${schema}".ledger_rows`));
    const { leases } = await store.claim('judge', { keys: ids }, ids.length, 60_000);
    expect(leases).toHaveLength(ids.length);
    for (const lease of leases) {
      const id = lease.key;
      const committed = await store.commit({
        id,
        version: versions.get(id)!,
        next: { id, status: 'rejected' },
        lease,
        audit: [{ ...createAudit, id, event: 'reject', from: 'confirmed', to: 'rejected' }],
        ledger: [{ ledger: 'declined', row: { id }, once: 'id' }],
      });
      expect(committed.ok).toBe(true);
    }
    // Its sessions end, and each reports its counts as it exits.
    await store.close();
    const counts = async () =>
      Object.fromEntries(
        (
          await sql((run) =>
            run(`SELECT relname, seq_scan, seq_tup_read, idx_scan FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('leases', 'ledger_rows')`, [
              schema,
            ]),
          )
        ).map((row) => [row['relname'], { seq_scan: Number(row['seq_scan']), seq_tup_read: Number(row['seq_tup_read']), idx_scan: Number(row['idx_scan']) }]),
      );
    let seen = await counts();
    for (let i = 0; i < 100 && (seen['ledger_rows']?.idx_scan ?? 0) < ids.length; i++) {
      await sleep(100);
      seen = await counts();
    }
    // One index lookup of the ledger per commit, and no row of it read by a scan.
    expect(seen['ledger_rows']).toMatchObject({ idx_scan: ids.length, seq_tup_read: 0 });
    // The lease is locked and removed by its key, not found by scanning every lease (twice a
    // commit: 81 scans for these 40 commits; what is left is one outside the commits).
    expect(seen['leases']!.seq_scan).toBeLessThanOrEqual(2);
  }, 30_000);

  it('lands a copy whose statistics cannot be taken: the ANALYZE after it is best effort', async () => {
    const url = freshSchemaUrl('analyze');
    const store = open(url);
    const schema = parsePostgresUrl(url).schema;
    // The tables made (a first write), then emptied again, so that another session can lock one.
    await store.create({ proposal: { id: ID, status: 'confirmed' }, key: 'k', audit: createAudit });
    await sql(async (run) => {
      for (const table of ['audit', 'proposals']) await run(`DELETE FROM "${schema}".${table}`);
    });
    const next = monotonicFactory();
    const ids = Array.from({ length: 20 }, () => next());
    async function* copied(): AsyncIterable<Dumped> {
      for (const [i, id] of ids.entries()) yield { kind: 'proposal', id, key: `c${i}`, text: `${JSON.stringify({ id, status: 'confirmed' })}\n` };
    }
    await sql(async (run) => {
      // Another session holds a table the ANALYZE must lock; the ANALYZE waits, and is cancelled.
      await run('BEGIN');
      await run(`LOCK TABLE "${schema}".leases IN SHARE UPDATE EXCLUSIVE MODE`);
      const loading = store.load(copied());
      let cancelled = false;
      for (let i = 0; i < 200 && !cancelled; i++) {
        // (Of the copy's statements, only the ANALYZE takes this lock.)
        const waiting = await run(`SELECT pid FROM pg_locks WHERE NOT granted AND mode = 'ShareUpdateExclusiveLock' AND relation = $1::regclass`, [
          `"${schema}".leases`,
        ]);
        for (const row of waiting) cancelled = (await run('SELECT pg_cancel_backend($1) AS done', [row['pid']]))[0]!['done'] || cancelled;
        if (!cancelled) await sleep(50);
      }
      try {
        expect(cancelled).toBe(true);
        await expect(loading).resolves.toBeUndefined();
      } finally {
        await run('ROLLBACK');
      }
    });
    for (const id of ids) expect((await store.read(id)).kind).toBe('found');
  }, 30_000);
});

describe.skipIf(!PG_URL)('PostgreSQL store commits in groups (SPEC §11)', () => {
  /** `count` confirmed proposals, leased; a change of each to rejected, with every kind of write. */
  async function leasedProposals(store: Store, count: number, tag: string) {
    const next = monotonicFactory();
    const ids = Array.from({ length: count }, () => next());
    for (const [i, id] of ids.entries()) {
      expect(await store.create({ proposal: { id, status: 'confirmed' }, key: `${tag}-${i}`, audit: { ...createAudit, id } })).toEqual({
        ok: true,
        version: '1',
      });
    }
    const { leases } = await store.claim('judge', { keys: ids }, ids.length, 60_000);
    expect(leases).toHaveLength(ids.length);
    const leaseOf = new Map(leases.map((lease) => [lease.key, lease]));
    const change = (id: string): Change => {
      const n = ids.indexOf(id);
      return {
        id,
        version: '1',
        next: { id, status: 'rejected', n, promoted_at: '2026-11-01T00:00:02Z' },
        lease: leaseOf.get(id)!,
        audit: [
          { ...judgeAudit, id, event: 'reject', to: 'rejected', args: { n } },
          { ...judgeAudit, id, event: 'promote', from: 'rejected', to: 'rejected', args: { n } },
        ],
        // The same `once` row twice: it is written once.
        ledger: [
          { ledger: 'declined', row: { id, n }, once: 'id' },
          { ledger: 'declined', row: { id, n }, once: 'id' },
        ],
        entries: [{ op: 'put', collection: 'rejected', id, entry: { id, n } }],
      };
    };
    return { ids, next, change };
  }

  /** What each commit of `changes` came to: its result, or 'error'. */
  async function commitAll(store: Store, changes: Change[]): Promise<Record<string, CommitResult | 'error'>> {
    const results = await Promise.allSettled(changes.map((one) => store.commit(one)));
    return Object.fromEntries(changes.map((one, i) => [one.id, results[i]!.status === 'fulfilled' ? results[i]!.value : 'error']));
  }

  /** Each landed commit wrote its document, audit rows in order, one ledger row and its entry; the others wrote nothing. */
  async function expectWritten(store: Store, ids: string[], landed: string[]) {
    const declined: unknown[] = [];
    for await (const row of store.ledger('declined')) declined.push(row);
    // (Concurrent commits of different proposals append in no set order.)
    expect(declined.sort((a, b) => (a as { n: number }).n - (b as { n: number }).n)).toEqual(landed.map((id) => ({ id, n: ids.indexOf(id) })));
    for (const [n, id] of ids.entries()) {
      const read = await store.read(id);
      const events = (await auditOf(store, id)).map((row) => `${row.event}${row.args ? ` ${JSON.stringify(row.args)}` : ''}`);
      if (landed.includes(id)) {
        expect(read.kind === 'found' && [read.stored.version, read.stored.proposal['n']]).toEqual(['2', n]);
        expect(events).toEqual(['create', `reject {"n":${n}}`, `promote {"n":${n}}`]);
        expect(await store.readEntry('rejected', id)).toEqual({ id, n });
      } else {
        expect(read.kind === 'found' && [read.stored.version, read.stored.proposal['status']]).toEqual(['1', 'confirmed']);
        expect(events).toEqual(['create']);
        expect(await store.readEntry('rejected', id)).toBeUndefined();
      }
    }
  }

  it('sends the commits that wait for a connection together, each with its own outcome, as if sent one by one', async () => {
    const url = freshSchemaUrl('group');
    const store = open(url);
    const { ids, next, change } = await leasedProposals(store, 16, 'group');
    const missing = next();
    const [stale, lost] = [ids[3]!, ids[10]!];
    const changes: Change[] = [
      ...ids.map((id) => {
        if (id === stale) return { ...change(id), version: '7' }; // read at a version it is no longer at
        if (id === lost) return { ...change(id), lease: { ...change(id).lease!, token: '999999' } }; // a lease not its own
        return change(id);
      }),
      { ...change(missing), lease: undefined },
    ];
    const before = { ...groupedCommits };
    // All at once: two go out at once, the rest wait for a connection and go out together.
    const outcomes = await commitAll(store, changes);
    expect(groupedCommits.statements - before.statements).toBeGreaterThan(0);
    expect(groupedCommits.commits - before.commits).toBeGreaterThanOrEqual(changes.length - 2);
    expect(groupedCommits.failed).toBe(before.failed);
    expect(outcomes).toEqual({
      ...Object.fromEntries(ids.map((id) => [id, { ok: true, version: '2' }])),
      [stale]: { ok: false, reason: 'changed' },
      [lost]: { ok: false, reason: 'lease' },
      [missing]: { ok: false, reason: 'missing' },
    });
    const landed = ids.filter((id) => id !== stale && id !== lost);
    await expectWritten(store, ids, landed);
    // The landed commits ended their leases; the others keep theirs.
    const held = await sql((run) => run(`SELECT key FROM "${schemaOf(url)}".leases ORDER BY key`));
    expect(held.map((row) => row['key'])).toEqual([stale, lost]);
    expect((await store.counts(['rejected', 'confirmed'])).counts).toEqual({ rejected: landed.length, confirmed: 2 });
  }, 30_000);

  it('commits the others of a group one by one when the database refuses the group: only the one it refuses fails', async () => {
    const url = freshSchemaUrl('group_refused');
    const store = open(url);
    const { ids, change } = await leasedProposals(store, 12, 'refused');
    const refused = ids[9]!;
    const before = { ...groupedCommits };
    // A version with a NUL byte: a text value the database refuses outright.
    const outcomes = await commitAll(
      store,
      ids.map((id) => (id === refused ? { ...change(id), version: '1\u0000' } : change(id))),
    );
    expect(groupedCommits.failed - before.failed).toBeGreaterThan(0);
    expect(outcomes).toEqual({ ...Object.fromEntries(ids.map((id) => [id, { ok: true, version: '2' }])), [refused]: 'error' });
    await expectWritten(
      store,
      ids,
      ids.filter((id) => id !== refused),
    );
  }, 30_000);
});

describe.skipIf(!PG_URL)('PostgreSQL store when the database refuses a commit (SPEC §11)', () => {
  for (const [code, name, when] of [
    ['40001', 'a serialization failure', 'at commit'],
    ['40P01', 'a deadlock', 'at once'],
  ] as const) {
    it(`retries a commit after ${name} (${code}), and it lands once with one audit row`, async () => {
      const url = freshSchemaUrl('retry');
      const store = open(url);
      expect(await store.create({ proposal: { id: ID, status: 'confirmed' }, key: 'k', audit: createAudit })).toEqual({ ok: true, version: '1' });
      const { leases } = await store.claim('judge', { keys: [ID] }, 1, 60_000);
      await injectFault(url, code, 1, when);
      const result = await store.commit({ id: ID, version: '1', next: { id: ID, status: 'approved' }, audit: [judgeAudit], lease: leases[0]! });
      expect(result).toEqual({ ok: true, version: '2' });
      // The first attempt failed, the second landed.
      expect(await faultHits(url)).toBe(2);
      expect((await auditOf(store, ID)).map((row) => row.event)).toEqual(['create', 'approve']);
      const read = await store.read(ID);
      expect(read.kind === 'found' && read.stored.proposal['status']).toBe('approved');
    });
  }

  it('does not retry any other error: the commit fails once and the proposal is left as it was', async () => {
    const url = freshSchemaUrl('noretry');
    const store = open(url);
    await store.create({ proposal: { id: ID, status: 'confirmed' }, key: 'k', audit: createAudit });
    await injectFault(url, '23514', 1, 'at commit');
    await expect(store.commit({ id: ID, version: '1', next: { id: ID, status: 'approved' }, audit: [judgeAudit] })).rejects.toThrow(/injected failure 23514/);
    expect(await faultHits(url)).toBe(1);
    expect((await auditOf(store, ID)).map((row) => row.event)).toEqual(['create']);
    const read = await store.read(ID);
    expect(read.kind === 'found' && [read.stored.version, read.stored.proposal['status']]).toEqual(['1', 'confirmed']);
  });

  it('reports a commit the database refuses for good as an error naming the proposal, on the command line', async () => {
    const url = freshSchemaUrl('refused');
    const dir = copyPipeline();
    const id = await confirmedProposal(dir, url);
    await injectFault(url, '23514', 1000, 'at commit');
    const env = { PIPELINE_STORE: url, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! };
    const judged = await runIn(['--dir', dir, 'run', 'judge', '--yes', '--json'], env);
    expect(judged.code).not.toBe(0);
    expect(judged.stderr).toContain(id);
    expect(judged.stderr).toContain('injected failure 23514');
    // One attempt per commit (the judge run's commit, and nothing retried it).
    expect(await faultHits(url)).toBe(1);
    const shown = await runIn(['--dir', dir, 'show', id, '--json'], env);
    expect(JSON.parse(shown.stdout).status).toBe('confirmed');
  });
});

describe.skipIf(!PG_URL)('PostgreSQL store migrations (SPEC §11)', () => {
  it('creates the tables once when 8 stores open a fresh schema and write at the same moment', async () => {
    const url = freshSchemaUrl('migrate');
    const stores = Array.from({ length: 8 }, () => open(url));
    const ids = stores.map((_store, n) => `01ARZ3NDEKTSV4RRFFQ69G${String(n).padStart(4, '0')}`);
    const results = await Promise.all(
      stores.map((store, n) => store.create({ proposal: { id: ids[n]!, status: 'confirmed' }, key: `k${n}`, audit: { ...createAudit, id: ids[n]! } })),
    );
    expect(results).toEqual(ids.map(() => ({ ok: true, version: '1' })));
    const schema = schemaOf(url);
    await sql(async (query) => {
      const tables = await query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [schema]);
      expect(tables.map((row) => row['table_name'])).toEqual(['audit', 'cache', 'documents', 'entries', 'leases', 'ledger_rows', 'meta', 'proposals']);
      expect(await query(`SELECT key, value FROM "${schema}".meta`)).toEqual([{ key: 'schema_version', value: String(SCHEMA_VERSION) }]);
      expect(await query(`SELECT count(*)::int AS n FROM "${schema}".proposals`)).toEqual([{ n: 8 }]);
      expect(await query(`SELECT count(*)::int AS n FROM "${schema}".audit`)).toEqual([{ n: 8 }]);
    });
  });
});

describe.skipIf(!PG_URL)('a PostgreSQL URL as the store of pipeline.yaml (SPEC §11)', () => {
  it('is the store commands use, under PIPELINE_STORE, under --store', async () => {
    const [inYaml, inEnv, inFlag] = [freshSchemaUrl('yaml'), freshSchemaUrl('env'), freshSchemaUrl('flag')];
    const dir = copyPipeline();
    const main = path.join(dir, 'pipeline.yaml');
    writeFileSync(main, readFileSync(main, 'utf8').replace(/^store: .*$/m, `store: ${inYaml}`));
    const env = { PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE! };
    const propose = async (extra: Record<string, string>, ...flags: string[]) => {
      const created = await runIn(['--dir', dir, ...flags, 'propose', '-'], { ...env, ...extra }, { input: JSON.stringify(proposalInput()) });
      expect(created.code, created.stderr).toBe(0);
      return created.stdout.trim();
    };
    const inYamlId = await propose({});
    const inEnvId = await propose({ PIPELINE_STORE: inEnv });
    const inFlagId = await propose({ PIPELINE_STORE: inEnv }, '--store', inFlag);
    // Nothing was written next to pipeline.yaml: the store is the database.
    expect(existsSync(path.join(dir, '.pipeline'))).toBe(false);
    const status = await runIn(['--dir', dir, 'status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ pending: 1, confirmed: 0 });
    for (const [url, id] of [
      [inYaml, inYamlId],
      [inEnv, inEnvId],
      [inFlag, inFlagId],
    ] as const) {
      const ids: string[] = [];
      for await (const entry of open(url).index()) ids.push(entry.id);
      expect(ids, url).toEqual([id]);
    }
  });
});
