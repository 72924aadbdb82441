/**
 * The PostgreSQL store's group commit under faults (SPEC §11): a connection cut after a statement
 * landed, `close` with commits or reads waiting, groups and renewals that could lock in a cycle, and a
 * read-back that must not take a commit that never reached the database for one that landed. Each
 * test failed against the first group commit (a hostile review's reproductions, 2026-12-05).
 */
import net from 'node:net';
import { monotonicFactory } from 'ulid';
import { describe, expect, it } from 'vitest';
import { groupedCommits, parsePostgresUrl } from '../../engine/store/postgres-store.js';
import type { AuditRow, Change, CommitResult, Store } from '../../engine/store/types.js';
import { freshSchemaUrl, PG_URL } from '../pg/database.js';
import { postgresStores } from './postgres-open.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const open = postgresStores();

const createAudit: AuditRow = { at: '2026-11-01T00:00:00Z', id: '', event: 'create', from: null, to: 'confirmed', stage: 't', actor: 'cli' };
const judgeAudit: AuditRow = { at: '2026-11-01T00:00:01Z', id: '', event: 'approve', from: 'confirmed', to: 'approved', stage: 'judge', actor: 'run' };

async function leased(store: Store, count: number, tag: string) {
  const next = monotonicFactory();
  const ids = Array.from({ length: count }, () => next());
  for (const [i, id] of ids.entries()) await store.create({ proposal: { id, status: 'confirmed' }, key: `${tag}-${i}`, audit: { ...createAudit, id } });
  const { leases } = await store.claim('judge', { keys: ids }, ids.length, 60_000);
  const leaseOf = new Map(leases.map((lease) => [lease.key, lease]));
  const change = (id: string): Change => ({
    id,
    version: '1',
    next: { id, status: 'approved', n: ids.indexOf(id) },
    lease: leaseOf.get(id)!,
    audit: [{ ...judgeAudit, id }],
  });
  return { ids, change };
}

/** Every commit's outcome, or 'timeout' when one has not settled after `ms` (handlers attached at once, so no rejection goes unhandled). */
function settle(promises: Promise<CommitResult>[], ms: number): Promise<PromiseSettledResult<CommitResult>[] | 'timeout'> {
  const all = Promise.allSettled(promises);
  return Promise.race([all, sleep(ms).then(() => 'timeout' as const)]);
}

/** A TCP proxy to the test server that, once armed with a statement name, cuts the connection that sent it right after the server answered. */
async function cuttingProxy(target: URL) {
  let armed: { name: string; how: 'rst' | 'fin' } | undefined;
  let cuts = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    let marked: 'rst' | 'fin' | undefined;
    client.on('data', (data) => {
      if (armed && data.includes(Buffer.from(`${armed.name}\u0000`))) {
        marked = armed.how;
        armed = undefined;
      }
      upstream.write(data);
    });
    upstream.on('data', (data) => {
      if (marked) {
        cuts++;
        // The server has run the statement (and committed its implicit transaction); the client never hears.
        if (marked === 'rst') client.resetAndDestroy();
        else client.destroy();
        upstream.destroy();
        marked = undefined;
        return;
      }
      client.write(data);
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    arm: (name: string, how: 'rst' | 'fin') => (armed = { name, how }),
    cuts: () => cuts,
    close: () => server.close(),
  };
}

const sqlRows = async (text: string, values: unknown[] = []) => {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Record<string, any>[];
  } finally {
    await client.end();
  }
};

/** A row locked FOR UPDATE from a session of its own, as another worker would hold it, until `release`. */
function holdRow(table: string, column: 'id' | 'key', key: string): Promise<{ release(): Promise<void> }> {
  return hold(`SELECT 1 FROM ${table} WHERE ${column} = $1 FOR UPDATE`, [key]);
}

/** The locks `statement` takes, held in a transaction of a session of its own until `release`. */
async function hold(statement: string, values: unknown[] = []): Promise<{ release(): Promise<void> }> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query('BEGIN');
  await client.query(statement, values);
  return {
    release: async () => {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

/** The server's count of deadlocks it broke in this database. */
async function deadlocks(): Promise<number> {
  return (await sqlRows(`SELECT deadlocks::int AS d FROM pg_stat_database WHERE datname = current_database()`))[0]!['d'] as number;
}

/**
 * `count` reads of a proposal while another session holds the proposals table locked: four take
 * the other pool's four connections and wait on the lock (this returns once they do), the rest
 * wait for a connection. `waiting` lists the server processes waiting on the lock.
 */
async function readsOfALockedTable(tag: string, count: number) {
  const url = freshSchemaUrl(tag);
  const store = open(url);
  const schema = parsePostgresUrl(url).schema;
  const { ids } = await leased(store, 1, tag);
  const blocker = await hold(`LOCK TABLE "${schema}".proposals IN ACCESS EXCLUSIVE MODE`);
  const outcomes: (string | undefined)[] = [];
  const reads = Array.from({ length: count }, (_, i) =>
    store.read(ids[0]!).then(
      (read) => (outcomes[i] = read.kind),
      (error: Error & { code?: string }) => (outcomes[i] = `error: ${error.code ?? error.message}`),
    ),
  );
  const waiting = () => sqlRows(`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`, [`"${schema}".`]);
  while ((await waiting()).length < 4) await sleep(10);
  return { store, blocker, outcomes, reads, waiting };
}

describe.skipIf(!PG_URL)('PostgreSQL group commit: lost connections and close', () => {
  for (const how of ['fin', 'rst'] as const) {
    it(`a group whose connection is cut (${how}) after it landed: each member reports what landed`, async () => {
      const proxy = await cuttingProxy(new URL(PG_URL));
      const url = freshSchemaUrl('cut').replace(`:${new URL(PG_URL).port}/`, `:${proxy.port}/`);
      const store = open(url);
      const schema = parsePostgresUrl(url).schema;
      const { ids, change } = await leased(store, 6, how);
      const before = { ...groupedCommits };
      proxy.arm('pipeline_commit_group', how);
      const results = await settle(
        ids.map((id) => store.commit(change(id))),
        20_000,
      );
      expect(proxy.cuts()).toBe(1);
      expect(groupedCommits.failed - before.failed).toBe(1);
      const db = await sqlRows(`SELECT id, version::text AS version FROM "${schema}".proposals ORDER BY id`);
      const audit = await sqlRows(`SELECT id, count(*)::int AS n FROM "${schema}".audit GROUP BY id ORDER BY id`);
      expect(audit.map((row) => row['n'])).toEqual(ids.map(() => 2));
      const outcomes = (results as PromiseSettledResult<CommitResult>[]).map((r) =>
        r.status === 'fulfilled' ? r.value : `error: ${String((r.reason as Error).message)}`,
      );
      // Every commit landed (version 2, two audit rows each), so each must be reported ok.
      expect(db.every((row) => row['version'] === '2')).toBe(true);
      expect(outcomes).toEqual(ids.map(() => expect.objectContaining({ ok: true })));
      proxy.close();
    });
  }

  it('a lone commit whose connection is reset after it landed is reported as landed', async () => {
    const proxy = await cuttingProxy(new URL(PG_URL));
    const url = freshSchemaUrl('cut1').replace(`:${new URL(PG_URL).port}/`, `:${proxy.port}/`);
    const store = open(url);
    const { ids, change } = await leased(store, 1, 'lone');
    proxy.arm('pipeline_commit', 'rst');
    const result = await store.commit(change(ids[0]!)).catch((error: Error) => `error: ${error.message} ${(error as { code?: string }).code}`);
    const read = await store.read(ids[0]!);
    expect(read.kind === 'found' && read.stored.version).toBe('2');
    expect(result).toEqual({ ok: true, version: '2' });
    proxy.close();
  });

  it('close() while commits wait in the queue: each settles, and none waiting is written after close', async () => {
    const url = freshSchemaUrl('close');
    const store = open(url);
    const schema = parsePostgresUrl(url).schema;
    const { ids, change } = await leased(store, 20, 'close');
    const promises = ids.map((id) => store.commit(change(id)));
    const outcomes = settle(promises, 10_000);
    const internal = store as unknown as { waiting: { change: Change }[]; pools: unknown };
    while (internal.waiting.length === 0) await sleep(0);
    const queued = new Set(internal.waiting.map((item) => item.change.id));
    await store.close();
    const results = await outcomes;
    expect(results).not.toBe('timeout');
    expect(internal.pools, 'no pool is opened again after close').toBeUndefined();
    const versions = new Map((await sqlRows(`SELECT id, version::text AS version FROM "${schema}".proposals`)).map((row) => [row['id'], row['version']]));
    for (const [index, result] of (results as PromiseSettledResult<CommitResult>[]).entries()) {
      const id = ids[index]!;
      if (queued.has(id)) {
        expect(result.status, id).toBe('rejected');
        expect(versions.get(id), id).toBe('1');
      } else expect(result.status === 'fulfilled' && result.value.ok ? '2' : '1').toBe(versions.get(id));
    }
  });

  it('close() while reads wait for a connection: the one still waiting fails at once, and those running finish', async () => {
    const { store, blocker, outcomes, reads } = await readsOfALockedTable('close3', 5);
    const closing = store.close();
    for (let waited = 0; outcomes.filter(Boolean).length === 0 && waited < 5_000; waited += 10) await sleep(10);
    expect(outcomes.filter(Boolean), 'the read waiting for a connection has failed, and only it').toEqual([
      'error: the store was closed before a connection was free',
    ]);
    await blocker.release();
    await Promise.all(reads);
    expect(await Promise.race([closing.then(() => 'closed'), sleep(5_000).then(() => 'close() still pending')])).toBe('closed');
    expect(outcomes.filter((outcome) => outcome === 'found')).toHaveLength(4);
    expect((store as unknown as { waiters: Set<unknown> }).waiters.size, 'nothing left waiting for a connection').toBe(0);
  });

  it('a read whose server process is terminated fails alone: its connection is not given to the next read', async () => {
    const { store, blocker, outcomes, reads, waiting } = await readsOfALockedTable('term', 12);
    await sqlRows('SELECT pg_terminate_backend($1, 10000)', [(await waiting())[0]!['pid']]);
    await blocker.release();
    await Promise.all(reads);
    expect(outcomes.filter((outcome) => outcome !== 'found')).toEqual(['error: 57P01']);
    // After reads and claims that all got their connection, nothing is left waiting for one.
    await store.claim('judge', { query: { status: 'confirmed' } }, 1, 60_000);
    expect((store as unknown as { waiters: Set<unknown> }).waiters.size).toBe(0);
  });

  it('close() while a refused group goes one by one: every commit settles', async () => {
    const url = freshSchemaUrl('close2');
    const store = open(url);
    const { ids, change } = await leased(store, 16, 'close2');
    // One member the database refuses (as the commit's own test does): the group goes one by one.
    const promises = ids.map((id, i) => store.commit(i === 5 ? { ...change(id), version: '1\u0000' } : change(id)));
    const outcomes = settle(promises, 8_000);
    // Close once the group has failed and its commits go one by one.
    const failed = groupedCommits.failed;
    while (groupedCommits.failed === failed) await sleep(1);
    const closing = store.close();
    const results = await outcomes;
    expect(results).not.toBe('timeout');
    expect(await Promise.race([closing.then(() => 'closed'), sleep(5_000).then(() => 'close() still pending')])).toBe('closed');
  });
});

describe.skipIf(!PG_URL)('PostgreSQL group commit: grouped and alone, byte for byte', () => {
  it('the same changes grouped and alone leave the same store', async () => {
    const dumps: string[] = [];
    const results: unknown[] = [];
    for (const mode of ['alone', 'group'] as const) {
      const store = open(freshSchemaUrl(`cmp_${mode}`));
      const ids = [
        '01ARZ3NDEKTSV4RRFFQ69G5FB1',
        '01ARZ3NDEKTSV4RRFFQ69G5FB2',
        '01ARZ3NDEKTSV4RRFFQ69G5FB3',
        '01ARZ3NDEKTSV4RRFFQ69G5FB4',
        '01ARZ3NDEKTSV4RRFFQ69G5FB5',
      ];
      for (const [i, id] of ids.entries()) await store.create({ proposal: { id, status: 'confirmed' }, key: `k${i}`, audit: { ...createAudit, id } });
      // A ledger row already there for ids[0] (the `once` check must see it in both modes).
      await store.commit({
        id: ids[0]!,
        version: '1',
        next: { id: ids[0], status: 'confirmed', x: 1 },
        audit: [{ ...judgeAudit, id: ids[0]! }],
        ledger: [{ ledger: 'declined', row: { id: ids[0], artifact_id: 'a0' }, once: 'id' }],
      });
      const weird = 'q"\\ \u0000 NULL {a,b} 😀 \ud800 é\n\t';
      const big = 'x"'.repeat(1_500_000);
      const changes: Change[] = ids.map((id, i) => ({
        id,
        version: i === 0 ? '2' : '1',
        next: {
          id,
          status: i === 1 ? '' : i === 2 ? undefined : 'approved',
          text: weird,
          ...(i === 3 ? { big } : {}),
          ...(i % 2 ? { promoted_at: 'now' } : {}),
        } as Record<string, unknown>,
        audit: [
          { ...judgeAudit, id, args: { weird } },
          { ...judgeAudit, id, event: 'promote', args: { i } },
        ],
        ledger: [
          { ledger: 'declined', row: { id, artifact_id: i === 4 ? undefined : 'w"\\ NULL {a,b} 😀 é', weird }, once: 'id' },
          { ledger: 'declined', row: { id, artifact_id: 'same' }, once: 'artifact_id' },
          { ledger: 'passed', row: { lesson_id: id, weird } },
        ],
        entries: [
          { op: 'put', collection: 'approved', id: ids[0]!, entry: { from: id, weird } },
          { op: 'put', collection: 'approved', id, entry: { weird } },
        ],
      }));
      const internal = store as unknown as {
        commitAtOnce(change: Change, text: string, status: string | null): Promise<CommitResult>;
        commitTogether(group: { change: Change; text: string; status: string | null }[]): Promise<CommitResult[]>;
      };
      const { serializeProposal } = await import('../../engine/store/types.js');
      const items = changes.map((change) => ({
        change,
        text: serializeProposal(change.next),
        status: typeof change.next['status'] === 'string' ? (change.next['status'] as string) : null,
      }));
      if (mode === 'alone') {
        const out = [];
        for (const item of items) out.push(await internal.commitAtOnce(item.change, item.text, item.status));
        results.push(out);
      } else results.push(await internal.commitTogether(items));
      const rows: unknown[] = [];
      for await (const item of store.dump()) rows.push(item);
      const schema = parsePostgresUrl(store.location).schema;
      const extra = await sqlRows(`SELECT id, status, marks, version FROM "${schema}".proposals ORDER BY id`);
      const ledger = await sqlRows(`SELECT ledger, key, proposal_id, row FROM "${schema}".ledger_rows ORDER BY seq`);
      dumps.push(JSON.stringify({ rows, extra, ledger }));
    }
    expect(results[1]).toEqual(results[0]);
    expect(dumps[1]).toBe(dumps[0]);
  }, 60_000);
});

describe.skipIf(!PG_URL)('PostgreSQL group commit: lock order', () => {
  it('two groups over the same proposals in opposite orders never deadlock', async () => {
    const url = freshSchemaUrl('dl');
    const one = open(url);
    const two = open(url);
    const next = monotonicFactory();
    const ids = Array.from({ length: 16 }, () => next());
    for (const [i, id] of ids.entries()) await one.create({ proposal: { id, status: 'confirmed' }, key: `dl${i}`, audit: { ...createAudit, id } });
    const { serializeProposal } = await import('../../engine/store/types.js');
    const item = (id: string, who: string) => {
      const change: Change = { id, version: '1', next: { id, status: 'approved', who }, audit: [{ ...judgeAudit, id, actor: 'cli' }] };
      return { change, text: serializeProposal(change.next), status: 'approved' };
    };
    type Internal = { commitTogether(group: ReturnType<typeof item>[]): Promise<CommitResult[]> };
    const before = await deadlocks();
    let rounds = 0;
    for (; rounds < 10; rounds++) {
      // reset
      const schema = parsePostgresUrl(url).schema;
      await sqlRows(`UPDATE "${schema}".proposals SET version = 1`);
      await sqlRows(`DELETE FROM "${schema}".audit WHERE version > 1`);
      const blocker = await holdRow(`"${schema}".proposals`, 'id', ids[8]!);
      const both = Promise.allSettled([
        (one as unknown as Internal).commitTogether(ids.map((id) => item(id, 'one'))),
        (two as unknown as Internal).commitTogether([...ids].reverse().map((id) => item(id, 'two'))),
      ]);
      await sleep(300);
      // Both groups wait (behind the blocker, or behind each other): the test holds them where a cycle could form.
      const locks = await sqlRows(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`);
      expect(locks[0]!['n']).toBeGreaterThanOrEqual(2);
      await blocker.release();
      const settled = await both;
      // One group landed whole and the other found every version moved: no error, no deadlock.
      const outcomes = settled.map((result) =>
        result.status === 'fulfilled' ? result.value.map((one) => (one.ok ? 'ok' : one.reason)) : [String(result.reason)],
      );
      expect(outcomes.map((each) => [...new Set(each)].join()).sort()).toEqual(['changed', 'ok']);
    }
    const after = await deadlocks();
    expect(after - before).toBe(0);
  }, 120_000);

  it('a group and a renewal of the same leases in opposite orders never deadlock', async () => {
    const url = freshSchemaUrl('rn');
    const store = open(url);
    const schema = parsePostgresUrl(url).schema;
    const { ids, change } = await leased(store, 16, 'rn');
    const { serializeProposal } = await import('../../engine/store/types.js');
    const leases = ids.map((id) => change(id).lease!);
    const before = await deadlocks();
    const blocker = await holdRow(`"${schema}".leases`, 'key', ids[8]!);
    const items = [...ids].reverse().map((id) => ({ change: change(id), text: serializeProposal(change(id).next), status: 'approved' }));
    const both = Promise.allSettled([
      (store as unknown as { commitTogether(g: typeof items): Promise<CommitResult[]> }).commitTogether(items),
      store.renew([...leases].reverse(), 60_000),
    ]);
    await sleep(300);
    await blocker.release();
    const settled = await both;
    expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled']);
    const after = await deadlocks();
    expect(after - before).toBe(0);
  }, 60_000);
});

describe.skipIf(!PG_URL)('PostgreSQL group commit: read-back', () => {
  it('does not report a commit that never reached the database as landed', async () => {
    const url = freshSchemaUrl('rb');
    const store = open(url);
    const schema = parsePostgresUrl(url).schema;
    const { ids, change } = await leased(store, 6, 'rb');
    // ids[2]: a commit that records an audit row but leaves the document as it is (as stored).
    // ids[4]: a ledger row JSON cannot write (stands for any error without a SQL code before the statement is sent).
    const changes = ids.map(
      (id, i): Change =>
        i === 2
          ? { ...change(id), next: { id, status: 'confirmed' } }
          : i === 4
            ? { ...change(id), ledger: [{ ledger: 'declined', row: { id, big: 1n as unknown as number } }] }
            : change(id),
    );
    const results = await Promise.allSettled(changes.map((one) => store.commit(one)));
    const audit = await sqlRows(`SELECT count(*)::int AS n FROM "${schema}".audit WHERE id = $1`, [ids[2]]);
    const out = results.map((r) => (r.status === 'fulfilled' ? r.value : `error: ${(r.reason as Error).message}`));
    // Alone, ids[2] lands at version 2 with its audit row.
    expect(out[2]).toEqual({ ok: true, version: '2' });
    expect(audit[0]!['n']).toBe(2);
  });

  it("does not take another store's identical audit row for its own commit's", async () => {
    const proxy = await closingProxy(new URL(PG_URL));
    const direct = freshSchemaUrl('twin');
    const store = open(direct.replace(`:${new URL(PG_URL).port}/`, `:${proxy.port}/`));
    const other = open(direct);
    const { ids, change } = await leased(store, 1, 'twin');
    const mine = change(ids[0]!);
    // The commit never reaches the server; meanwhile another store writes the same transition, with
    // the same audit row, at the same version; then the connection closes and the commit reads back.
    proxy.arm('pipeline_commit', async () => {
      expect(await other.commit({ ...mine, lease: undefined })).toEqual({ ok: true, version: '2' });
    });
    const result = await store.commit(mine).catch((error: Error) => `error: ${error.message}`);
    expect(proxy.cuts()).toBe(1);
    expect(result).toEqual({ ok: false, reason: 'changed' });
    proxy.close();
  });
});

/** A proxy that, once armed, forwards the statement and at once closes both sides (FIN): the server has not answered yet. */
async function closingProxy(target: URL) {
  let armed: { name: string; drop?: () => Promise<void> } | undefined;
  let cuts = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    const close = () => {
      upstream.end();
      client.end();
    };
    client.on('data', (data) => {
      const cut = armed && data.includes(Buffer.from(`${armed.name}\u0000`)) ? armed : undefined;
      if (!cut) return void upstream.write(data);
      armed = undefined;
      cuts++;
      // Sent on and both ends closed; or, with `drop`, never sent: `drop` runs, then both close.
      if (!cut.drop) {
        upstream.write(data);
        close();
      } else void cut.drop().then(close);
    });
    upstream.on('data', (data) => {
      if (!client.writableEnded) client.write(data);
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    arm: (name: string, drop?: () => Promise<void>) => (armed = { name, drop }),
    cuts: () => cuts,
    close: () => server.close(),
  };
}

describe.skipIf(!PG_URL)('PostgreSQL group commit: a connection lost before the server answered', () => {
  const through = (proxy: { port: number }, name: string) => freshSchemaUrl(name).replace(`:${new URL(PG_URL).port}/`, `:${proxy.port}/`);

  for (const members of [1, 6]) {
    it(`${members === 1 ? 'a lone commit' : 'a group'} whose statement waits for a lock when its connection closes: what landed is reported landed`, async () => {
      const proxy = await closingProxy(new URL(PG_URL));
      const url = through(proxy, `wait${members}`);
      const store = open(url);
      const schema = parsePostgresUrl(url).schema;
      const { ids, change } = await leased(store, members, `wait${members}`);
      // A lease row held for a while (a renewal in flight): the statement waits on the server.
      const blocker = await holdRow(`"${schema}".leases`, 'key', ids[members - 1]!);
      proxy.arm(members === 1 ? 'pipeline_commit' : 'pipeline_commit_group');
      const outcomes = settle(
        ids.map((id) => store.commit(change(id))),
        30_000,
      );
      await sleep(500);
      await blocker.release();
      const results = await outcomes;
      expect(proxy.cuts()).toBe(1);
      const audit = await sqlRows(`SELECT id, count(*)::int AS n FROM "${schema}".audit GROUP BY id ORDER BY id`);
      expect(audit.map((row) => row['n'])).toEqual(ids.map(() => 2));
      expect((results as PromiseSettledResult<CommitResult>[]).map((result) => (result.status === 'fulfilled' ? result.value : String(result.reason)))).toEqual(
        ids.map(() => expect.objectContaining({ ok: true, version: '2' })),
      );
      proxy.close();
    });
  }

  it('a group whose connection closes right after the statement went out: every commit lands once and is reported landed', async () => {
    const proxy = await closingProxy(new URL(PG_URL));
    for (let round = 0; round < 8; round++) {
      const url = through(proxy, `race${round}`);
      const store = open(url);
      const schema = parsePostgresUrl(url).schema;
      const { ids, change } = await leased(store, 6, `race${round}`);
      proxy.arm('pipeline_commit_group');
      const results = await settle(
        ids.map((id) => store.commit(change(id))),
        30_000,
      );
      const audit = await sqlRows(`SELECT id, count(*)::int AS n FROM "${schema}".audit GROUP BY id ORDER BY id`);
      expect(audit.map((row) => row['n'])).toEqual(ids.map(() => 2));
      expect((results as PromiseSettledResult<CommitResult>[]).map((result) => (result.status === 'fulfilled' ? result.value : String(result.reason)))).toEqual(
        ids.map(() => expect.objectContaining({ ok: true, version: '2' })),
      );
    }
    expect(proxy.cuts()).toBe(8);
    proxy.close();
  }, 120_000);
});

describe.skipIf(!PG_URL)('PostgreSQL group commit: a lease that expires while a group waits', () => {
  it('a claim of the expired leases and the waiting group both finish (a deadlock between them is retried)', async () => {
    const url = freshSchemaUrl('expiry');
    const store = open(url);
    const other = open(url);
    const schema = parsePostgresUrl(url).schema;
    const next = monotonicFactory();
    const ids = Array.from({ length: 4 }, () => next());
    for (const [i, id] of ids.entries()) await store.create({ proposal: { id, status: 'confirmed' }, key: `expiry-${i}`, audit: { ...createAudit, id } });
    const { leases } = await store.claim('judge', { keys: ids }, 4, 1500);
    const leaseOf = new Map(leases.map((lease) => [lease.key, lease]));
    const { serializeProposal } = await import('../../engine/store/types.js');
    const items = ids.map((id) => {
      const change: Change = { id, version: '1', next: { id, status: 'approved' }, lease: leaseOf.get(id)!, audit: [{ ...judgeAudit, id }] };
      return { change, text: serializeProposal(change.next), status: 'approved' };
    });
    const blocker = await holdRow(`"${schema}".leases`, 'key', ids[3]!);
    const internal = store as unknown as { commitTogether(group: typeof items): Promise<CommitResult[]> };
    const group = internal.commitTogether(items).then(
      (results) => results.map((result) => (result.ok ? 'ok' : result.reason)),
      (error: Error) => `error: ${error.message}`,
    );
    await sleep(1700); // the leases expire while the group waits behind the blocker
    const claim = other.claim('judge', { query: { status: 'confirmed' } }, 10, 60_000).then(
      (claimed) => claimed.leases.length,
      (error: Error) => `error: ${error.message}`,
    );
    await sleep(200);
    await blocker.release();
    const [grouped, claimed] = await Promise.all([group, claim]);
    expect(typeof grouped, String(grouped)).toBe('object');
    expect(typeof claimed, String(claimed)).toBe('number');
  }, 30_000);
});
