/** The PostgreSQL store: the shared contract, plus what only a shared database can get wrong. */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { parsePostgresUrl, PostgresStore, SCHEMA_VERSION } from '../../engine/store/postgres-store.js';
import type { AuditRow, Store } from '../../engine/store/types.js';
import { freshSchemaUrl, PG_URL } from '../pg/database.js';
import { LAYOUT, storeContract } from './contract.js';

const open = (url = freshSchemaUrl()) => new PostgresStore(parsePostgresUrl(url), LAYOUT);
const opened: Store[] = [];
const track = <T extends Store>(store: T): T => {
  opened.push(store);
  return store;
};

describe('PostgreSQL handle, no server needed', () => {
  it('closes quietly, twice, when it never connected and when its server refused it', async () => {
    const never = new PostgresStore(parsePostgresUrl('postgres://nobody@127.0.0.1:1/none'), LAYOUT);
    await expect(never.close()).resolves.toBeUndefined();
    await expect(never.close()).resolves.toBeUndefined();
    const refused = new PostgresStore(parsePostgresUrl('postgres://nobody@127.0.0.1:1/none'), LAYOUT);
    await expect(refused.exists()).rejects.toThrow();
    await expect(refused.close()).resolves.toBeUndefined();
  });
});

describe.skipIf(!PG_URL)('PostgreSQL', () => {
  storeContract('postgres store', {
    // The contract closes what these open, after each test.
    make: async (layout) => new PostgresStore(parsePostgresUrl(freshSchemaUrl()), layout),
    reopen: async (store) => new PostgresStore(parsePostgresUrl(`${PG_URL}?schema=${(store as PostgresStore).location.split('schema=')[1]}`), LAYOUT),
    corrupt: async (store, id, text) => (store as PostgresStore).putRaw(id, text),
    expire: async (store, lease) => (store as PostgresStore).expireLease(lease),
  });

  describe('postgres store', () => {
    it('names itself without user-info, and refuses a schema name that is not a plain SQL name', () => {
      expect(parsePostgresUrl('postgres://alice:secret@db.example:5432/app?schema=team_a').display).toBe('postgres://db.example:5432/app?schema=team_a');
      expect(parsePostgresUrl('postgresql://db/app').schema).toBe('pipeline');
      expect(() => parsePostgresUrl('postgres://db/app?schema=Robert%27)%3B%20DROP')).toThrow(/not a plain lower-case SQL name/);
      for (const reserved of ['pg_catalog', 'pg_temp', 'pg_toast', 'pg_x'])
        expect(() => parsePostgresUrl(`postgres://db/app?schema=${reserved}`)).toThrow(/reserves/);
      expect(parsePostgresUrl('postgres://db/app?schema=pgx').schema).toBe('pgx');
    });

    it('reads a cache entry it cannot use as a miss, as every backend does: one that does not parse, or a table it may not read', async () => {
      const url = freshSchemaUrl();
      const store = track(open(url));
      await store.cache.put('kept', { text: 'answer' });
      await store.cache.put('damaged', { text: 'answer' });
      const pg = (await import('pg')).default;
      const { connection, schema } = parsePostgresUrl(url);
      const client = new pg.Client({ connectionString: connection });
      await client.connect();
      const role = `reader_${schema}`;
      let reader: PostgresStore | undefined;
      try {
        await client.query(
          `UPDATE "${schema}".cache SET value = '{"text": "unterminated' WHERE value LIKE '%answer%' AND key <> (SELECT min(key) FROM "${schema}".cache)`,
        );
        const values = (await Promise.all(['kept', 'damaged'].map((key) => store.cache.get(key)))).filter((value) => value !== undefined);
        expect(values).toEqual([{ text: 'answer' }]);
        // A role that may read every table but the cache.
        await client.query(`CREATE ROLE ${role} LOGIN`);
        await client.query(`GRANT USAGE ON SCHEMA "${schema}" TO ${role}`);
        await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA "${schema}" TO ${role}`);
        await client.query(`REVOKE SELECT ON "${schema}".cache FROM ${role}`);
        reader = open(url.replace('postgres://postgres@', `postgres://${role}@`));
        expect(await reader.exists()).toBe(true);
        expect(await reader.cache.get('kept')).toBeUndefined();
      } finally {
        await reader?.close();
        await client.query(`DROP OWNED BY ${role}`).catch(() => undefined);
        await client.query(`DROP ROLE IF EXISTS ${role}`);
        await client.end();
      }
    });

    it('says a statement its server cancelled (a statement_timeout) was cancelled, naming the store: not an internal error', async () => {
      const url = freshSchemaUrl();
      const store = track(open(url));
      await store.appendLedger('declined', { artifact_id: 'a' });
      const pg = (await import('pg')).default;
      const { connection, schema } = parsePostgresUrl(url);
      const locker = new pg.Client({ connectionString: connection });
      await locker.connect();
      const { describePostgresFailure, withPlainFailures } = await import('../../engine/store/failures.js');
      const timed = parsePostgresUrl(`${url}&options=${encodeURIComponent('-c statement_timeout=300')}`);
      const impatient = track(withPlainFailures(new PostgresStore(timed, LAYOUT), (error) => describePostgresFailure(error, timed.display)));
      try {
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE "${schema}".proposals IN ACCESS EXCLUSIVE MODE`);
        await expect(impatient.counts(['pending'])).rejects.toThrow(
          `the PostgreSQL store at ${timed.display} cannot be used: a statement was cancelled (a statement_timeout, or a cancel request) (canceling statement due to statement timeout)`,
        );
      } finally {
        await locker.query('ROLLBACK');
        await locker.end();
      }
    });

    it('reports a proposal whose document was edited in the database by hand, its status with it, where the store recorded it', async () => {
      const url = freshSchemaUrl();
      const store = track(open(url));
      const id = '01ARZ3NDEKTSV4RRFFQ69G5FA1';
      const audit: AuditRow = { at: '2026-11-01T00:00:00Z', id, event: 'create', from: null, to: 'pending', stage: 't', actor: 'cli' };
      await store.create({ proposal: { id, status: 'pending' }, key: 'k', audit });
      const pg = (await import('pg')).default;
      const { connection, schema } = parsePostgresUrl(url);
      const client = new pg.Client({ connectionString: connection });
      await client.connect();
      try {
        await client.query(`UPDATE "${schema}".proposals SET doc = $1`, [JSON.stringify({ id, status: 'confirmed' })]);
      } finally {
        await client.end();
      }
      const listed = [];
      for await (const item of store.list({ status: 'pending' })) listed.push(item);
      expect(listed).toEqual([
        { kind: 'malformed', id, reason: 'its document says status "confirmed", but the store recorded "pending" (edited in the database by hand?)' },
      ]);
    });

    it('creates nothing when only read, and says it does not exist', async () => {
      const store = track(open());
      expect(await store.exists()).toBe(false);
      expect(await store.read('01ARZ3NDEKTSV4RRFFQ69G5FA1')).toEqual({ kind: 'missing' });
      expect((await store.counts(['pending'])).counts).toEqual({ pending: 0 });
      for await (const _ of store.list()) throw new Error('listed something in an empty store');
      expect(await store.exists()).toBe(false);
    });

    it('records its schema version, and refuses a store written by a newer engine', async () => {
      const url = freshSchemaUrl();
      const store = track(open(url));
      await store.appendLedger('declined', { artifact_id: 'a' });
      const pg = (await import('pg')).default;
      const { connection, schema } = parsePostgresUrl(url);
      const client = new pg.Client({ connectionString: connection });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT value FROM "${schema}".meta WHERE key = 'schema_version'`);
        expect(rows).toEqual([{ value: String(SCHEMA_VERSION) }]);
        await client.query(`UPDATE "${schema}".meta SET value = '99' WHERE key = 'schema_version'`);
      } finally {
        await client.end();
      }
      const newer = new RegExp(`schema version 99; this pipeline knows version ${SCHEMA_VERSION}`);
      await expect(track(open(url)).appendLedger('declined', { artifact_id: 'b' })).rejects.toThrow(newer);
      // A commit too, though a commit finds the tables without creating them.
      const id = '01ARZ3NDEKTSV4RRFFQ69G5FA1';
      const audit: AuditRow = { at: '2026-11-01T00:00:00Z', id, event: 'approve', from: 'confirmed', to: 'approved', stage: 'judge', actor: 'run' };
      await expect(track(open(url)).commit({ id, version: '1', next: { id, status: 'approved' }, audit: [audit] })).rejects.toThrow(newer);
    });

    it('migrates a version 1 store to version 2: its rows kept, and each commit from then on tokened', async () => {
      const url = freshSchemaUrl();
      const id = '01ARZ3NDEKTSV4RRFFQ69G5FA1';
      const audit: AuditRow = { at: '2026-11-01T00:00:00Z', id, event: 'create', from: null, to: 'confirmed', stage: 't', actor: 'cli' };
      await track(open(url)).create({ proposal: { id, status: 'confirmed' }, key: 'k', audit });
      const pg = (await import('pg')).default;
      const { connection, schema } = parsePostgresUrl(url);
      const client = new pg.Client({ connectionString: connection });
      await client.connect();
      try {
        // The store as version 1 left it.
        await client.query(`ALTER TABLE "${schema}".audit DROP COLUMN token`);
        await client.query(`UPDATE "${schema}".meta SET value = '1' WHERE key = 'schema_version'`);
        // A read-only command's cache write leaves an older store as it is.
        const reader = track(open(url));
        expect(await reader.exists()).toBe(true);
        await reader.cache.put('pool-index', { n: 1 });
        expect((await client.query(`SELECT value FROM "${schema}".meta WHERE key = 'schema_version'`)).rows).toEqual([{ value: '1' }]);
        const store = track(open(url));
        const change = { id, version: '1', next: { id, status: 'approved' }, audit: [{ ...audit, event: 'approve', from: 'confirmed', to: 'approved' }] };
        expect(await store.commit(change)).toEqual({ ok: true, version: '2' });
        expect((await client.query(`SELECT value FROM "${schema}".meta WHERE key = 'schema_version'`)).rows).toEqual([{ value: '2' }]);
        const rows = (await client.query(`SELECT version::int, row, token FROM "${schema}".audit ORDER BY version`)).rows;
        expect(rows.map((row) => [row.version, JSON.parse(row.row).event, typeof row.token])).toEqual([
          [1, 'create', 'object'],
          [2, 'approve', 'string'],
        ]);
      } finally {
        await client.end();
      }
    });

    it('asks again after a lookup of its tables failed (the first connection dropped)', async () => {
      const url = freshSchemaUrl();
      await track(open(url)).writeDocument('x', 'y', {});
      const target = new URL(PG_URL!);
      let first = true;
      const proxy = net.createServer((client) => {
        if (first) {
          first = false;
          return void client.destroy();
        }
        const upstream = net.connect(Number(target.port), target.hostname);
        client.pipe(upstream).pipe(client);
        client.on('error', () => upstream.destroy());
        upstream.on('error', () => client.destroy());
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      try {
        const store = track(open(url.replace(`:${target.port}/`, `:${(proxy.address() as net.AddressInfo).port}/`)));
        await expect(store.exists()).rejects.toThrow();
        expect(await store.exists()).toBe(true);
        expect(await store.writeDocument('x', 'y', {})).toBe('exists');
      } finally {
        proxy.close();
      }
    });

    it('gives concurrent claims of one queue disjoint batches', async () => {
      const url = freshSchemaUrl();
      const first = track(open(url));
      for (let i = 0; i < 40; i++) {
        const id = `01ARZ3NDEKTSV4RRFFQ69G${String(i).padStart(4, '0')}`;
        await first.create({
          proposal: { id, status: 'confirmed' },
          key: `k${i}`,
          audit: { at: '2026-11-01T00:00:00Z', id, event: 'create', from: null, to: 'confirmed', stage: 't', actor: 'cli' },
        });
      }
      const workers = Array.from({ length: 6 }, () => track(open(url)));
      const claimed = await Promise.all(workers.map((worker) => worker.claim('judge', { query: { status: 'confirmed' } }, 10, 60_000)));
      const keys = claimed.flatMap((result) => result.leases.map((lease) => lease.key));
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.length).toBe(40);
    });
  });
});

// Every store opened here holds a pool of connections: close them when the file is done.
import { afterAll } from 'vitest';
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});
