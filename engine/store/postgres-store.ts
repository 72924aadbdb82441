/**
 * The store on PostgreSQL (SPEC §11): any number of worker processes on any number of machines
 * share one database.
 *
 * - One transaction per commit: the proposal's compare-and-swap on its version, its audit rows
 *   (unique per proposal and version), its ledger rows and its pool entries land together or not
 *   at all — there is nothing to repair.
 * - Claims are leases, not held transactions: a batch is claimed with `FOR UPDATE SKIP LOCKED`
 *   in a MATERIALIZED CTE (a WITH query runs once; a sub-select may not), each lease carries a
 *   fencing token, leases are renewed while model calls run (no transaction is open during a
 *   call), and a commit deletes its lease by token inside its transaction — a stale token rolls
 *   the commit back. Lease times use the database clock only.
 * - Documents are stored as the exact text the engine wrote, so key order survives (unconfirm and
 *   restore stay byte-identical) and a copy back to files is the same bytes.
 * - Tables are created and migrated by the engine, under an advisory lock, with a recorded schema
 *   version; a newer schema than this engine knows is refused. Reading a schema that does not
 *   exist creates nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { PipelineError } from '../errors.js';
import { isUlid } from '../util/ids.js';
import { hasPath, isObject } from '../util/json-path.js';
import {
  serializeProposal,
  type AnswerCache,
  type AuditRow,
  type Change,
  type Claimed,
  type CommitResult,
  type Counts,
  type CreateResult,
  type Dumped,
  type IndexEntry,
  type Lease,
  type Listed,
  type NewProposal,
  type Query,
  type Queue,
  type ReadResult,
  type StatusTally,
  type Store,
  type StoreLayout,
  parseDocument,
  statusFilter,
} from './types.js';
import { assertCollectionName } from './journal.js';

/** The schema version this engine writes; a store with a newer one is refused. */
export const SCHEMA_VERSION = 2;
const PAGE = 1000;
/** Codes worth retrying the whole transaction for (serialization, deadlock, a server starting up). */
const RETRYABLE = new Set(['40001', '40P01', '57P03']);

export interface PostgresLocation {
  /** The connection string without the `schema` parameter. */
  connection: string;
  schema: string;
  /** For messages: no user-info, no password. */
  display: string;
}

/** Is `location` a PostgreSQL URL? */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** Parse `postgres://user@host:port/db?schema=NAME` (schema default `pipeline`). */
export function parsePostgresUrl(location: string): PostgresLocation {
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw new PipelineError('store.url', 'the store URL is not a valid postgres:// URL', { hint: 'postgres://user@host:5432/db?schema=NAME' });
  }
  const schema = url.searchParams.get('schema') ?? 'pipeline';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new PipelineError('store.url', `the schema name ${JSON.stringify(schema)} is not a plain lower-case SQL name`, {
      hint: 'schema=letters, digits and _ (e.g. schema=pipeline)',
    });
  }
  // PostgreSQL keeps names that begin with pg_ for itself (pg_catalog, pg_temp, pg_toast…).
  if (schema.startsWith('pg_')) {
    throw new PipelineError('store.url', `the schema name ${JSON.stringify(schema)} begins with pg_, which PostgreSQL reserves for its own schemas`, {
      hint: 'schema=letters, digits and _, not beginning with pg_ (e.g. schema=pipeline)',
    });
  }
  url.searchParams.delete('schema');
  const display = new URL(url.toString());
  display.username = '';
  display.password = '';
  display.searchParams.set('schema', schema);
  return { connection: url.toString(), schema, display: display.toString() };
}

function pgCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Did the server answer that the statement failed (so it wrote nothing)? Only an error the server
 * sent says so: it has a severity and an SQLSTATE, and is not a lost connection (class 08). A
 * socket's error (ECONNRESET, EPIPE — five capitals too) or a dropped connection says nothing.
 */
function refusedByServer(error: unknown): boolean {
  const { severity } = error as { severity?: unknown };
  const code = pgCode(error);
  return typeof severity === 'string' && code !== undefined && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08');
}

/** An error the server sent as FATAL or PANIC: the server ends the connection after it. */
function endedByServer(error: unknown): boolean {
  const severity = error && typeof error === 'object' ? (error as { severity?: unknown }).severity : undefined;
  return severity === 'FATAL' || severity === 'PANIC';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server process: its pid, and when it started (a pid alone may be a later process's). */
interface BackendIdentity {
  pid: number;
  started: string;
}

/**
 * Each commit connection's server process, asked on its first use: after a lost connection, that
 * process (and only that one, not a later process given its pid) is ended before a commit reads
 * back whether it landed.
 */
const backends = new WeakMap<object, BackendIdentity>();

async function identify(client: PoolClient): Promise<void> {
  if (backends.has(client)) return;
  // The function behind pg_stat_activity, filtered to this process: the view also joins two
  // catalogs, which a new session plans and reads cold (~6 ms a session).
  const { rows } = await client.query<BackendIdentity>('SELECT pid, backend_start::text AS started FROM pg_stat_get_activity(pg_backend_pid())');
  if (rows[0]) backends.set(client, rows[0]);
}
/** The connection whose statement failed with an error, for `lostBackend`. */
const failedOn = new WeakMap<object, object>();

function remember(error: unknown, client: object): void {
  if (error && typeof error === 'object') failedOn.set(error, client);
}

/** Does the connection still answer `sql`? */
function answers(client: PoolClient, sql: string): Promise<boolean> {
  return client.query(sql).then(
    () => true,
    () => false,
  );
}

/**
 * Run `work` on a checked-out connection whose server process is known. When it fails, `settle`
 * runs and says whether the connection still answers; one that does not, on an error that is
 * neither the server's answer nor a refusal, is lost: it is not reused, and the error remembers
 * it, so that a read-back ends its server process first (`landed`).
 */
async function onConnection<T>(
  pool: Pool,
  waiters: Waiters,
  work: (client: PoolClient) => Promise<T>,
  settle: (client: PoolClient, error: unknown) => Promise<boolean>,
  options: { identified: boolean },
): Promise<T> {
  const client = await checkout(pool, waiters);
  // A lost connection also arrives as an event (as pool.query would listen): the failed
  // statement reports it. A discarded connection keeps the listener, events and all.
  const onError = () => undefined;
  client.on('error', onError);
  let discard: Error | undefined;
  try {
    if (options.identified) await identify(client);
    return await work(client);
  } catch (error) {
    const answered = await settle(client, error);
    if (!answered && !(error instanceof Refusal) && !refusedByServer(error)) {
      discard = error as Error;
      remember(error, client);
    }
    // The server's FATAL answer (its process terminated, the server shutting down) wrote nothing,
    // and ends the connection: it goes, though its socket may not have closed yet.
    else if (endedByServer(error)) discard = error as Error;
    throw error;
  } finally {
    if (!discard) client.off('error', onError);
    client.release(discard);
  }
}

/** What waits for a connection, each failed by the store's `close` (see `checkout`). */
type Waiters = Set<(error: Error) => void>;

/**
 * A connection from `pool`, or the store's closing error if the store closes first: pg-pool never
 * serves its queue after `end()`, so what waits there would wait for ever. A connection that
 * comes after all the same is given back at once.
 */
function checkout(pool: Pool, waiters: Waiters): Promise<PoolClient> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      waiters.delete(fail);
      reject(error);
    };
    waiters.add(fail);
    pool.connect().then((client) => {
      if (settled) return client.release();
      settled = true;
      waiters.delete(fail);
      resolve(client);
    }, fail);
  });
}

/**
 * Each commit's token, written beside its first audit row: the read-back after a lost connection
 * (`landed`) knows the row for this commit's by it. The row's text is no proof: another store
 * may have written the same transition at the same version in the same second.
 */
const tokens = new WeakMap<Change, string>();

function commitToken(change: Change): string {
  let token = tokens.get(change);
  if (token === undefined) {
    token = randomBytes(12).toString('base64url');
    tokens.set(change, token);
  }
  return token;
}

/** The server process of the connection `error` came from, if known. */
function lostBackend(error: unknown): BackendIdentity | undefined {
  const client = error && typeof error === 'object' ? failedOn.get(error) : undefined;
  return client ? backends.get(client) : undefined;
}

/** Run `work` again on serialization failures and deadlocks (up to 8 attempts, with a growing random pause). */
async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (error instanceof Refusal || error instanceof KeyTaken) throw error;
      if (!RETRYABLE.has(pgCode(error) ?? '') || attempt >= 8) throw error;
      await sleep(Math.random() * 20 * attempt);
    }
  }
}

/**
 * How long a document read with its claim stands in for a read of it: a unit that waited longer
 * for a free slot (slow judges) reads it again, so it never starts from an older version than
 * a read at its start would give by more than this.
 */
const CLAIMED_FRESH_MS = 1000;

/**
 * The cache table's key for a cache key: its SHA-256. A key holds a whole prompt, and a B-tree
 * entry holds at most 2,704 bytes — a prompt of a few KB as the key failed the put.
 */
function cacheRowKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Where the answer cache keeps bytes (`putBytes`): a key prefix no JSON entry's key starts with. */
const BYTES_KEY = '\u0001bytes\u0001';

/** The commit's prepared-statement name: one per connection, and a pool serves one store (one schema). */
const COMMIT_STATEMENT = 'pipeline_commit';
/** The prepared statement of several commits at once (see `commitSoon`). */
const GROUP_STATEMENT = 'pipeline_commit_group';
/** The commit pool's connections. */
const COMMIT_CONNECTIONS = 2;
/** The most commits one statement takes. */
const GROUP_MAX = 16;

/** For tests: statements that landed several commits, the commits they carried, and groups that failed and went one by one. */
export const groupedCommits = { statements: 0, commits: 0, failed: 0 };

/** A commit waiting for a commit connection. */
interface Waiting {
  change: Change;
  text: string;
  status: string | null;
  resolve: (result: CommitResult) => void;
  reject: (error: unknown) => void;
}

const leaseKey = (lease: Lease) => `${lease.stage}\u0000${lease.key}\u0000${lease.token}`;

/** Why a commit could not land, raised inside its transaction to roll it back. */
class Refusal {
  constructor(readonly result: Extract<CommitResult, { ok: false }>) {}
}

/** A creation whose key another proposal holds. */
class KeyTaken {
  constructor(readonly existing: string) {}
}

export class PostgresStore implements Store {
  /**
   * A batch run keeps up to this many commits in flight (see the driver): the more wait for a
   * connection, the more go out in one statement (see `commitSoon`). Four workers with instant
   * judges: 635–753 proposals/s against 519–656 with 8 in flight, alternating (docs/performance.md).
   */
  readonly commitDepth = 32;
  readonly location: string;
  readonly cache: AnswerCache;
  private readonly schema: string;
  private readonly owner = `${process.pid}.${randomBytes(6).toString('hex')}`;
  /** Is this store's table set there, and of this version? (Asked again until it is.) */
  private readonly lookup = new Shared(() => this.lookUp());
  /** Creating or migrating the tables, once for the commits that ask at the same time. */
  private readonly migration = new Shared(() => this.migrate());
  private created = false;
  /** When `recover` last dropped expired leases (ms since the epoch; 0: never). */
  private reaped = 0;
  /** Leases this handle's own commits ended (a commit deletes its lease): releasing them needs no query. */
  private readonly ended = new Set<string>();
  /** Documents read by this handle's last claims, by id, each answering the next read of it once (if still fresh). */
  private readonly claimed = new Map<string, { doc: string; version: string; at: number }>();

  constructor(
    private readonly target: PostgresLocation,
    private readonly layout: StoreLayout,
  ) {
    this.location = target.display;
    this.schema = target.schema;
    this.cache = {
      // Never throws, as on every backend: an entry that cannot be read (no permission on the
      // table, a value written by hand that does not parse) is a miss, never a failure of the work.
      get: async (key, maxBytes) => {
        try {
          const value = await this.cached(key, maxBytes);
          return value === undefined ? undefined : (JSON.parse(value) as unknown);
        } catch {
          return undefined;
        }
      },
      put: (key, value) => this.keep(key, JSON.stringify(value)),
      // Bytes as base64 text in the same table, under keys no JSON entry has (those never start with U+0001).
      getBytes: async (key, maxBytes = Number.POSITIVE_INFINITY) => {
        const value = await this.cached(`${BYTES_KEY}${key}`, Math.ceil(maxBytes / 3) * 4).catch(() => undefined);
        if (value === undefined) return undefined;
        const bytes = Buffer.from(value, 'base64');
        return bytes.length <= maxBytes ? bytes : undefined;
      },
      putBytes: (key, bytes) => this.keep(`${BYTES_KEY}${key}`, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')),
    };
  }

  /** The cache's text under `key`, if any (and at most `maxLength` bytes of it: a longer one is not fetched). */
  private async cached(key: string, maxLength = Number.POSITIVE_INFINITY): Promise<string | undefined> {
    if (!(await this.exists())) return undefined;
    // (A text value is at most 1 GB: every one is shorter than the largest int4.)
    const { rows } = await this.query<{ value: string }>(`SELECT value FROM ${this.t('cache')} WHERE key = $1 AND octet_length(value) <= $2`, [
      cacheRowKey(key),
      Math.min(maxLength, 2 ** 31 - 1),
    ]);
    return rows[0]?.value;
  }

  private async keep(key: string, value: string): Promise<void> {
    // Tables of another schema version: a cache is not worth a migration (reads, which put
    // here, use an older store as it is).
    if ((await this.exists()) && !this.created) return;
    await this.ensure();
    // Committed without waiting for the write-ahead log's flush (`synchronous_commit` off for
    // this statement's transaction only): like the file store's cache, which is never synced,
    // an entry outlives the run that wrote it, not the server's crash — and a model call's put
    // no longer waits for a sync (0.43–0.51 → 0.24 ms a put here).
    await this.query(
      `WITH async AS (SELECT set_config('synchronous_commit', 'off', true)) INSERT INTO ${this.t('cache')} (key, value) SELECT $1, $2 FROM async ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
      [cacheRowKey(key), value],
    );
  }

  /** A table of this store's schema, quoted. */
  private t(table: string): string {
    return `"${this.schema}"."${table}"`;
  }

  /**
   * The connection pools, made on first use: commits get their own small pool whose sessions plan
   * prepared statements generically — the commit statement is the same every time, and planning
   * its CTEs anew for each commit was a third of the server's CPU — while everything else keeps
   * per-value plans (a listing of a rare status must use the status index; a generic plan, which
   * cannot know the value is rare, scanned a million rows in id order instead). The commit's
   * generic plan is made on a session's first commit, and every table it reads is read by key: with
   * sequential scans off it uses those keys' indexes even when it is planned against a lease table
   * and a ledger that statistics call empty (a store just copied in, or just analyzed) — else every
   * later commit of the session scanned the whole ledger for its `once` rows.
   */
  private pools: Promise<{ other: Pool; commit: Pool }> | undefined;
  private closed = false;
  /** What waits for a connection, failed when the store closes (see `checkout`). */
  private readonly waiters: Waiters = new Set();
  private connect(purpose: 'other' | 'commit' = 'other'): Promise<Pool> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    this.pools ??= import('pg').then(({ default: pg }) => {
      const make = (max: number, settings: string) => {
        // Timestamps stay text (the engine writes RFC 3339 strings; the database's clock is used in SQL only).
        const pool = new pg.Pool({
          connectionString: this.target.connection,
          max,
          idleTimeoutMillis: 10_000,
          application_name: 'pipeline',
          // A transaction is never held across a model call; one left open by a bug ends by itself.
          options: `-c idle_in_transaction_session_timeout=60000${settings}`,
        });
        pool.on('error', () => undefined); // an idle client's lost connection is replaced on next use
        return pool;
      };
      return { other: make(4, ''), commit: make(COMMIT_CONNECTIONS, ' -c plan_cache_mode=force_generic_plan -c enable_seqscan=off') };
    });
    return this.pools.then((pools) => pools[purpose]);
  }

  /**
   * One statement on a pooled connection; a named one (`{name, text}`) is prepared once per
   * connection. A commit's error remembers the server process that ran it (see `landed`); other
   * statements are never read back, so their connections are not asked which process they are.
   */
  private async query<R extends object = Record<string, unknown>>(
    text: string | { name: string; text: string },
    values: unknown[] = [],
    purpose: 'other' | 'commit' = 'other',
  ): Promise<{ rows: R[]; rowCount: number }> {
    const pool = await this.connect(purpose);
    const result = await onConnection(
      pool,
      this.waiters,
      (client) => (typeof text === 'string' ? client.query(text, values) : client.query({ ...text, values })),
      // Failed other than by the server's answer: in this process before it was sent if the
      // connection still answers, else with the connection lost.
      (client, error) => (refusedByServer(error) ? Promise.resolve(true) : answers(client, 'SELECT 1')),
      { identified: purpose === 'commit' },
    );
    return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
  }

  /** Run `work` in one transaction, retried on serialization failures and deadlocks. */
  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const pool = await this.connect();
    return retrying(() =>
      onConnection(
        pool,
        this.waiters,
        async (client) => {
          await client.query('BEGIN');
          const result = await work(client);
          await client.query('COMMIT');
          return result;
        },
        // A connection that still answers has rolled back whatever ran.
        (client) => answers(client, 'ROLLBACK'),
        { identified: true }, // (a move commits in a transaction)
      ),
    );
  }

  /**
   * Does the schema hold this store's tables? (Never creates them.) Tables of another schema
   * version are there, but not ready: the first write migrates them, or refuses a newer version
   * (`ensure`); reads use them as they are.
   */
  async exists(): Promise<boolean> {
    if (this.created) return true;
    const found = await this.lookup.get();
    if (!found)
      this.lookup.forget(); // ask again next time: someone may create it meanwhile
    else if (found === 'ready') this.created = true;
    return found !== false;
  }

  private async lookUp(): Promise<false | 'ready' | 'other version'> {
    const { rows } = await this.query<{ table: string | null }>('SELECT to_regclass($1) AS table', [`"${this.schema}".meta`]);
    if (rows[0]?.table == null) return false;
    const version = await this.query<{ value: string }>(`SELECT value FROM ${this.t('meta')} WHERE key = 'schema_version'`);
    return version.rows[0]?.value === String(SCHEMA_VERSION) ? 'ready' : 'other version';
  }

  /** Create or migrate the tables (writers only). */
  private async ensure(): Promise<void> {
    if (!this.created) await this.migration.get();
  }

  /** Create or migrate the tables under an advisory lock, or refuse a newer schema version. */
  private async migrate(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`pipeline.migrate.${this.schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.t('meta')} (key text PRIMARY KEY, value text NOT NULL)`);
      const { rows } = await client.query<{ value: string }>(`SELECT value FROM ${this.t('meta')} WHERE key = 'schema_version'`);
      const found = rows[0] ? Number(rows[0].value) : 0;
      if (found > SCHEMA_VERSION) {
        throw new PipelineError(
          'store.schema',
          `${this.location} has schema version ${found}; this pipeline knows version ${SCHEMA_VERSION} and will not touch it`,
          { hint: 'upgrade pipeline' },
        );
      }
      if (found < 1) await migrateToV1(client, (table) => this.t(table), this.schema);
      if (found < 2) await migrateToV2(client, (table) => this.t(table));
      await client.query(`INSERT INTO ${this.t('meta')} (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [
        String(SCHEMA_VERSION),
      ]);
    });
    this.created = true;
  }

  async close(): Promise<void> {
    // Commits still waiting to be sent fail, and so does everything else still waiting for a
    // connection of either pool; what is on a connection finishes (`end` waits for it). Nothing
    // reopens a pool.
    this.closed = true;
    const error = new Error('the store was closed before this commit was sent');
    for (const item of this.waiting.splice(0)) item.reject(error);
    for (const fail of [...this.waiters]) fail(new Error('the store was closed before a connection was free'));
    const pools = this.pools;
    this.pools = undefined;
    // (pg that never loaded has no pools to end.)
    if (pools)
      await pools.then(
        ({ other, commit }) => Promise.all([other.end(), commit.end()]),
        () => undefined,
      );
  }

  async recover(options: { sweep?: boolean } = {}): Promise<number> {
    // Nothing is ever half-written here; the reaper drops leases long expired (their work is
    // claimable as soon as they expire — this only keeps the table small), at a run's start and
    // then at most once a minute: the engine asks before every commit.
    if (!options.sweep && Date.now() - this.reaped < 60_000) return 0;
    if (!(await this.exists())) return 0;
    this.reaped = Date.now();
    await this.query(`DELETE FROM ${this.t('leases')} WHERE expires_at < now() - interval '1 hour'`);
    return 0;
  }

  // ---------------------------------------------------------------- reading

  private marksOf(proposal: Record<string, unknown>): string[] {
    return this.layout.marks.filter((field) => hasPath(proposal, field));
  }

  async read(id: string): Promise<ReadResult> {
    if (!isUlid(id)) throw new Error(`invalid id: ${JSON.stringify(id)}`);
    const claimed = this.claimed.get(id);
    this.claimed.delete(id);
    if (claimed && Date.now() - claimed.at < CLAIMED_FRESH_MS) return parseDocument(id, claimed.doc, claimed.version);
    if (!(await this.exists())) return { kind: 'missing' };
    const { rows } = await this.query<{ doc: string; version: string }>(`SELECT doc, version::text AS version FROM ${this.t('proposals')} WHERE id = $1`, [id]);
    const row = rows[0];
    if (!row) return { kind: 'missing' };
    return parseDocument(id, row.doc, row.version);
  }

  /**
   * The conditions of a query on the proposals table (aliased `alias`), appending their values.
   * Listings report malformed documents (no status) whatever the status asked for, as the file
   * store does; work queues never take them.
   */
  private conditions(query: Query, values: unknown[], alias = '', malformed = false): string[] {
    const column = (name: string) => (alias ? `${alias}.${name}` : name);
    const clauses: string[] = [];
    if (query.status !== undefined) {
      const statuses = ([] as string[]).concat(query.status);
      // One status as `=`, not `= ANY(…)`: the (status, id) index then yields rows in id order, so a
      // keyset page or a claim reads its LIMIT rows and stops instead of sorting every match.
      values.push(statuses.length === 1 ? statuses[0] : statuses);
      const match = statuses.length === 1 ? `${column('status')} = $${values.length}` : `${column('status')} = ANY($${values.length})`;
      clauses.push(malformed ? `(${match} OR ${column('status')} IS NULL)` : match);
    } else if (!malformed) {
      clauses.push(`${column('status')} IS NOT NULL`);
    }
    if (query.without !== undefined) {
      values.push(query.without);
      clauses.push(`NOT ($${values.length} = ANY(${column('marks')}))`);
    }
    if (query.after !== undefined) {
      values.push(query.after);
      clauses.push(`${column('id')} > $${values.length}`);
    }
    return clauses;
  }

  private where(query: Query, values: unknown[]): string {
    const clauses = this.conditions(query, values, '', true);
    return clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
  }

  async *index(query: Query = {}): AsyncIterable<IndexEntry> {
    if (!(await this.exists())) return;
    let after = query.after;
    for (;;) {
      const values: unknown[] = [];
      const sql = `SELECT id, status, marks FROM ${this.t('proposals')} ${this.where({ ...query, ...(after !== undefined ? { after } : {}) }, values)} ORDER BY id LIMIT ${PAGE}`;
      const { rows } = await this.query<{ id: string; status: string | null; marks: string[] }>(sql, values);
      for (const row of rows) yield { id: row.id, status: row.status, marks: row.marks };
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1]!.id;
    }
  }

  async *list(query: Query = {}): AsyncIterable<Listed> {
    if (!(await this.exists())) return;
    // A row of no status (a document that is not a proposal's, as a person may have written it) is
    // read whatever the status asked for: malformed, it is reported; a proposal, it is kept by its
    // own status, as every backend keeps it. A row selected by a status its document no longer
    // has (the document edited in the database by hand, the column not) is reported too: it is
    // selected by a status only the column holds, and would otherwise be in no listing at all.
    const wanted = statusFilter(query);
    let after = query.after;
    for (;;) {
      const values: unknown[] = [];
      const sql = `SELECT id, status, doc, version::text AS version FROM ${this.t('proposals')} ${this.where({ ...query, ...(after !== undefined ? { after } : {}) }, values)} ORDER BY id LIMIT ${PAGE}`;
      const { rows } = await this.query<{ id: string; status: string | null; doc: string; version: string }>(sql, values);
      for (const row of rows) {
        const read = parseDocument(row.id, row.doc, row.version);
        if (read.kind !== 'found') yield { kind: 'malformed', id: row.id, reason: read.kind === 'malformed' ? read.reason : 'missing' };
        else if (wanted(read.stored.proposal['status'])) yield read;
        else if (row.status !== null) {
          const status = read.stored.proposal['status'];
          const said = typeof status === 'string' ? `says status ${JSON.stringify(status.slice(0, 40))}` : 'has no status';
          yield { kind: 'malformed', id: row.id, reason: `its document ${said}, but the store recorded "${row.status}" (edited in the database by hand?)` };
        }
      }
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1]!.id;
    }
  }

  async tally(query: Query, mark?: string): Promise<StatusTally[]> {
    if (!(await this.exists())) return [];
    const values: unknown[] = [];
    const where = this.conditions(query, values);
    values.push(mark ?? null);
    // One statement, whatever the size of the queue: the rows are counted where they are, none is sent.
    const { rows } = await this.query<{ status: string; count: string; marked: string }>(
      `SELECT status, count(*) AS count, count(*) FILTER (WHERE $${values.length}::text = ANY(marks)) AS marked
         FROM ${this.t('proposals')} WHERE ${where.join(' AND ')} GROUP BY status`,
      values,
    );
    return rows.map((row) => ({ status: row.status, count: Number(row.count), marked: Number(row.marked) }));
  }

  async counts(states: readonly string[]): Promise<Counts> {
    const counts = new Map(states.map((state) => [state, 0]));
    const unknown = new Map<string, number>();
    const malformed: string[] = [];
    if (await this.exists()) {
      // One pass over the (status, id) index: an index-only scan once the table is vacuumed.
      const { rows } = await this.query<{ status: string | null; n: string }>(`SELECT status, count(*) AS n FROM ${this.t('proposals')} GROUP BY status`);
      for (const row of rows) {
        if (row.status === null) continue;
        if (counts.has(row.status)) counts.set(row.status, Number(row.n));
        else unknown.set(row.status, Number(row.n));
      }
      if (rows.some((row) => row.status === null)) {
        const bad = await this.query<{ id: string }>(`SELECT id FROM ${this.t('proposals')} WHERE status IS NULL ORDER BY id`);
        malformed.push(...bad.rows.map((row) => row.id));
      }
    }
    return { counts: Object.fromEntries(counts), malformed, unknown: Object.fromEntries(unknown) };
  }

  async keyHandled(key: string): Promise<{ by: 'proposal'; id: string } | { by: 'ledger' } | undefined> {
    if (!(await this.exists())) return undefined;
    const { rows } = await this.query<{ id: string }>(`SELECT id FROM ${this.t('proposals')} WHERE key = $1`, [key]);
    if (rows[0]) return { by: 'proposal', id: rows[0].id };
    const ledgers = this.layout.key.ledgers;
    if (ledgers.length === 0) return undefined;
    const found = await this.query(`SELECT 1 FROM ${this.t('ledger_rows')} WHERE ledger = ANY($1) AND key = $2 LIMIT 1`, [ledgers, key]);
    return found.rowCount ? { by: 'ledger' } : undefined;
  }

  async *ledger(ledger: string): AsyncIterable<Record<string, unknown>> {
    this.assertLedger(ledger);
    if (!(await this.exists())) return;
    let after = 0;
    for (;;) {
      // (The cursor is text so a bigint survives; ORDER BY names the column, not the text alias.)
      const { rows } = await this.query<{ cursor: string; row: string }>(
        `SELECT seq::text AS cursor, row FROM ${this.t('ledger_rows')} WHERE ledger = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE}`,
        [ledger, after],
      );
      for (const row of rows) yield JSON.parse(row.row) as Record<string, unknown>;
      if (rows.length < PAGE) return;
      after = Number(rows[rows.length - 1]!.cursor);
    }
  }

  async *audit(options: { id?: string } = {}): AsyncIterable<AuditRow> {
    if (!(await this.exists())) return;
    let after = 0;
    for (;;) {
      const values: unknown[] = [after];
      let sql = `SELECT seq::text AS cursor, row FROM ${this.t('audit')} WHERE seq > $1`;
      if (options.id !== undefined) {
        values.push(options.id);
        sql += ' AND id = $2';
      }
      const { rows } = await this.query<{ cursor: string; row: string }>(`${sql} ORDER BY seq LIMIT ${PAGE}`, values);
      for (const row of rows) yield JSON.parse(row.row) as AuditRow;
      if (rows.length < PAGE) return;
      after = Number(rows[rows.length - 1]!.cursor);
    }
  }

  async lastAudit(id: string): Promise<AuditRow | undefined> {
    if (!(await this.exists())) return undefined;
    const { rows } = await this.query<{ row: string }>(`SELECT row FROM ${this.t('audit')} WHERE id = $1 ORDER BY seq DESC LIMIT 1`, [id]);
    return rows[0] ? (JSON.parse(rows[0].row) as AuditRow) : undefined;
  }

  async changes(cursor?: string): Promise<{ all: boolean; ids: string[]; cursor: string }> {
    const match = /^p1:(\d+)$/.exec(cursor ?? '');
    if (!(await this.exists())) return { all: !match, ids: [], cursor: 'p1:0' };
    const { rows: top } = await this.query<{ seq: string | null }>(`SELECT max(seq)::text AS seq FROM ${this.t('audit')}`);
    const last = Number(top[0]?.seq ?? 0);
    if (!match || Number(match[1]) > last) return { all: true, ids: [], cursor: `p1:${last}` };
    const { rows } = await this.query<{ id: string }>(`SELECT DISTINCT id FROM ${this.t('audit')} WHERE seq > $1 AND seq <= $2 ORDER BY id`, [
      Number(match[1]),
      last,
    ]);
    return { all: false, ids: rows.map((row) => row.id), cursor: `p1:${last}` };
  }

  async readEntry(collection: string, id: string): Promise<unknown | undefined> {
    if (!(await this.exists())) return undefined;
    const { rows } = await this.query<{ body: string }>(`SELECT body FROM ${this.t('entries')} WHERE collection = $1 AND id = $2`, [collection, id]);
    if (!rows[0]) return undefined;
    try {
      return JSON.parse(rows[0].body) as unknown;
    } catch {
      return null;
    }
  }

  async *entries(collection: string): AsyncIterable<string> {
    if (!(await this.exists())) return;
    let after = '';
    for (;;) {
      const { rows } = await this.query<{ id: string }>(`SELECT id FROM ${this.t('entries')} WHERE collection = $1 AND id > $2 ORDER BY id LIMIT ${PAGE}`, [
        collection,
        after,
      ]);
      for (const row of rows) yield row.id;
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1]!.id;
    }
  }

  // ---------------------------------------------------------------- writing

  private assertLedger(ledger: string): void {
    if (ledger !== 'events' && this.layout.ledgers[ledger] === undefined) throw new Error(`unknown ledger "${ledger}"`);
  }

  /** The source key a ledger row records (so declined keys are found by index). */
  private rowKey(row: Record<string, unknown>): string | null {
    const key = row[this.layout.key.field];
    return typeof key === 'string' ? key : null;
  }

  async create(input: NewProposal): Promise<CreateResult> {
    const { proposal, key, audit } = input;
    if (!isUlid(proposal.id)) throw new Error(`invalid id: ${JSON.stringify(proposal.id)}`);
    await this.ensure();
    const text = serializeProposal(proposal);
    try {
      return await this.transaction(async (client) => {
        const inserted = await client.query(
          `INSERT INTO ${this.t('proposals')} (id, key, status, marks, doc, version) VALUES ($1, $2, $3, $4, $5, 1) ON CONFLICT (key) DO NOTHING`,
          [proposal.id, key, typeof proposal['status'] === 'string' ? proposal['status'] : null, this.marksOf(proposal), text],
        );
        if (!inserted.rowCount) {
          const { rows } = await client.query<{ id: string }>(`SELECT id FROM ${this.t('proposals')} WHERE key = $1`, [key]);
          throw new KeyTaken(rows[0]?.id ?? '');
        }
        await client.query(`INSERT INTO ${this.t('audit')} (id, version, ordinal, row) VALUES ($1, 1, 0, $2)`, [proposal.id, JSON.stringify(audit)]);
        return { ok: true as const, version: '1' };
      });
    } catch (error) {
      if (error instanceof KeyTaken) return { ok: false, reason: 'key_exists', existing: error.existing };
      throw error;
    }
  }

  commit(change: Change): Promise<CommitResult> {
    return this.commitOnce(change, false);
  }

  /** `commit`; `again` when this is the one more try of a commit whose connection was lost. */
  private async commitOnce(change: Change, again: boolean): Promise<CommitResult> {
    this.claimed.delete(change.id);
    if (change.audit.length === 0) throw new Error('a commit records at least one audit row');
    if (!isUlid(change.id)) throw new Error(`invalid id: ${JSON.stringify(change.id)}`);
    for (const write of change.ledger ?? []) this.assertLedger(write.ledger);
    if (!(await this.exists())) return { ok: false, reason: 'missing' };
    await this.ensure(); // (at once, unless the tables are of another schema version)
    const text = serializeProposal(change.next);
    const status = typeof change.next['status'] === 'string' ? change.next['status'] : null;
    try {
      // Moves check and report each entry; every other commit is one statement, one round trip.
      if (!(change.entries ?? []).some((write) => write.op === 'move')) return await this.commitSoon(change, text, status);
      return await this.transaction(async (client) => {
        if (change.lease) {
          // Fencing: the lease must still be ours and current; the commit ends it.
          const ended = await client.query(
            `DELETE FROM ${this.t('leases')} WHERE stage = $1 AND key = $2 AND token = $3 AND owner = $4 AND expires_at > now()`,
            [change.lease.stage, change.lease.key, change.lease.token, this.owner],
          );
          if (!ended.rowCount) throw new Refusal({ ok: false, reason: 'lease' });
        }
        const updated = await client.query<{ version: string }>(
          `UPDATE ${this.t('proposals')} SET doc = $1, status = $2, marks = $3, version = version + 1 WHERE id = $4 AND version::text = $5 RETURNING version::text AS version`,
          [text, status, this.marksOf(change.next), change.id, change.version],
        );
        if (!updated.rowCount) {
          const exists = await client.query(`SELECT 1 FROM ${this.t('proposals')} WHERE id = $1`, [change.id]);
          throw new Refusal({ ok: false, reason: exists.rowCount ? 'changed' : 'missing' });
        }
        const version = Number(updated.rows[0]!.version);
        for (const write of change.entries ?? []) {
          if (write.op === 'put') {
            await client.query(`INSERT INTO ${this.t('entries')} (collection, id, body) VALUES ($1, $2, $3) ON CONFLICT (collection, id) DO NOTHING`, [
              write.collection,
              write.id,
              `${JSON.stringify(write.entry, null, 2)}\n`,
            ]);
          } else {
            const there = await client.query(`SELECT 1 FROM ${this.t('entries')} WHERE collection = $1 AND id = $2`, [write.to, write.id]);
            if (there.rowCount) throw new Refusal({ ok: false, reason: 'entry', detail: `${write.to}/${write.id}.json exists already` });
            const moved = await client.query(`UPDATE ${this.t('entries')} SET collection = $1 WHERE collection = $2 AND id = $3`, [
              write.to,
              write.from,
              write.id,
            ]);
            if (!moved.rowCount) throw new Refusal({ ok: false, reason: 'entry', detail: `${write.from}/${write.id}.json is missing` });
          }
        }
        for (const write of change.ledger ?? []) {
          if (write.once !== undefined) {
            const value = write.row[write.once];
            const seen = await client.query(
              `SELECT 1 FROM ${this.t('ledger_rows')} WHERE ledger = $1 AND proposal_id = $2 AND (row::jsonb -> $3) = $4::jsonb LIMIT 1`,
              [write.ledger, change.id, write.once, JSON.stringify(value ?? null)],
            );
            if (seen.rowCount) continue;
          }
          await client.query(`INSERT INTO ${this.t('ledger_rows')} (ledger, key, proposal_id, row) VALUES ($1, $2, $3, $4)`, [
            write.ledger,
            this.rowKey(write.row),
            change.id,
            JSON.stringify(write.row),
          ]);
        }
        // Unique per proposal, version and position: a transition can never be recorded twice.
        for (const [ordinal, row] of change.audit.entries()) {
          await client.query(`INSERT INTO ${this.t('audit')} (id, version, ordinal, row, token) VALUES ($1, $2, $3, $4, $5)`, [
            change.id,
            version,
            ordinal,
            JSON.stringify(row),
            ordinal === 0 ? commitToken(change) : null,
          ]);
        }
        return { ok: true as const, version: String(version) };
      }).then((result) => {
        if (change.lease) this.ended.add(leaseKey(change.lease));
        return result;
      });
    } catch (error) {
      if (error instanceof Refusal) return error.result;
      const landed = await this.landed(error, change);
      if (typeof landed === 'object') return landed;
      // Its connection was lost and it did not land: it goes again, once, as a group's commit would.
      if (landed === 'absent' && lostBackend(error) && !again) return this.commitOnce(change, true);
      throw error;
    }
  }

  /**
   * After `error` on a commit's statement, did the commit land? Read back, never guessed: unless
   * the server refused the statement, its connection may have been lost after the commit, so the
   * commit's first audit row is looked up (the proposal, the version it made, position 0), and it
   * is this commit's only if it carries this commit's token (`commitToken`). The document is no
   * witness: another writer may have moved it on since, or this commit may not have changed it.
   * `undefined`: the read-back failed too.
   */
  private async landed(error: unknown, change: Change): Promise<CommitResult | 'absent' | undefined> {
    // Only a statement whose connection was lost may have landed: one the server refused, one that
    // failed in this process, and one never sent did not.
    if (!(error && typeof error === 'object' && failedOn.has(error))) return 'absent';
    const version = String(Number(change.version) + 1);
    try {
      // The statement may not have run yet, or still be running or waiting for a lock, on the
      // server process that lost its client: end that process (waiting up to 10 s for it to go)
      // so that the statement has committed or rolled back before the read-back looks. Without
      // knowing that process, or if it is still there, the outcome is not known.
      const backend = lostBackend(error);
      if (!backend) return undefined; // its process was never known
      // The process is named by its pid alone in the call, never by a filter over other sessions
      // (a filter's conditions may run in any order, and the call with them).
      const { rows: ended } = await this.query<{ gone: boolean }>(
        `SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start = $2::timestamptz)
                THEN pg_terminate_backend($1, 10000) ELSE true END AS gone`,
        [backend.pid, backend.started],
      );
      if (!ended[0]?.gone) {
        // pg_terminate_backend says false for a process that ended on its own between the look at
        // pg_stat_activity (a snapshot, taken once per statement) and the signal — as a process
        // whose client was cut does, on a loaded machine. Only one still there now is not known.
        const { rows: still } = await this.query<{ there: boolean }>(
          'SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start = $2::timestamptz) AS there',
          [backend.pid, backend.started],
        );
        if (still[0]?.there !== false) return undefined;
      }
      const { rows } = await this.query<{ token: string | null }>(`SELECT token FROM ${this.t('audit')} WHERE id = $1 AND version = $2 AND ordinal = 0`, [
        change.id,
        version,
      ]);
      if (rows[0]?.token !== commitToken(change)) return 'absent';
    } catch {
      return undefined;
    }
    if (change.lease) this.ended.add(leaseKey(change.lease));
    return { ok: true, version };
  }

  /**
   * Group commit. A commit goes out at once while one of the commit connections is free; commits
   * that come while both are busy wait for one, and then go out together, in one statement (at
   * most GROUP_MAX of them, no proposal twice), each with its own outcome. A statement costs this
   * server and its client far more than the rows it writes: 4,000 commits one per statement took
   * 300–500 µs each on 8 connections here, four per statement 106–139 µs (docs/performance.md).
   * A lone commit waits for nothing.
   */
  private commitSoon(change: Change, text: string, status: string | null): Promise<CommitResult> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ change, text, status, resolve, reject });
      this.sendWaiting();
    });
  }

  private waiting: Waiting[] = [];
  private sending = 0;

  private sendWaiting(): void {
    while (this.sending < COMMIT_CONNECTIONS && this.waiting.length > 0) {
      const group: Waiting[] = [];
      const ids = new Set<string>();
      const later: Waiting[] = [];
      for (const item of this.waiting) {
        if (group.length < GROUP_MAX && !ids.has(item.change.id)) {
          group.push(item);
          ids.add(item.change.id);
        } else later.push(item);
      }
      this.waiting = later;
      this.sending++;
      void this.send(group)
        .catch((error: unknown) => {
          for (const item of group) item.reject(error); // a promise settles once: only the unsettled see this
        })
        .finally(() => {
          this.sending--;
          this.sendWaiting();
        });
    }
  }

  private async send(group: Waiting[]): Promise<void> {
    const alone = (item: Waiting) => this.commitAtOnce(item.change, item.text, item.status).then(item.resolve, item.reject);
    if (group.length === 1) return alone(group[0]!);
    let results: CommitResult[];
    try {
      results = await this.commitTogether(group);
    } catch (error) {
      groupedCommits.failed++;
      // A statement the server refused wrote nothing; one whose connection was lost may have
      // landed, and each commit reads back whether it did. Those that did not go again one by one
      // (on this slot, so none waits in the pool past `close`): a commit the statement could not
      // take fails alone. One that cannot be read back fails with the error: it is not known.
      for (const item of group) {
        const landed = await this.landed(error, item.change);
        if (landed === 'absent') await alone(item);
        else if (landed) item.resolve(landed);
        else item.reject(error);
      }
      return;
    }
    group.forEach((item, index) => item.resolve(results[index]!));
  }

  /** What one commit's statement needs of a change: its lease, entries, ledger rows and audit rows. */
  private commitRows(change: Change) {
    const puts = (change.entries ?? []).flatMap((write) => (write.op === 'put' ? [write] : []));
    // Rows written at most once: a repeat within this change is dropped here (the statement's
    // check sees only rows committed before it).
    const seen = new Set<string>();
    const ledger = (change.ledger ?? []).filter((write) => {
      if (write.once === undefined) return true;
      const key = `${write.ledger}\u0000${write.once}\u0000${JSON.stringify(write.row[write.once] ?? null)}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return {
      lease: change.lease,
      entries: puts.map((write) => ({ collection: write.collection, id: write.id, body: `${JSON.stringify(write.entry, null, 2)}\n` })),
      ledger: ledger.map((write) => ({
        ledger: write.ledger,
        key: this.rowKey(write.row),
        row: JSON.stringify(write.row),
        once: write.once ?? null,
        value: write.once === undefined ? null : JSON.stringify(write.row[write.once] ?? null),
      })),
      audit: change.audit.map((row) => JSON.stringify(row)),
    };
  }

  /** The outcome of a commit from its statement's row. */
  private outcome(change: Change, row: { version: string | null; leased: boolean; present: boolean }): CommitResult {
    if (row.version !== null) {
      if (change.lease) this.ended.add(leaseKey(change.lease));
      return { ok: true, version: row.version };
    }
    if (change.lease && !row.leased) return { ok: false, reason: 'lease' };
    return { ok: false, reason: row.present ? 'changed' : 'missing' };
  }

  /**
   * A commit without entry moves as one statement (data-modifying CTEs, so one implicit
   * transaction and one round trip instead of one per row): the lease row is locked and checked,
   * the document updated only at the version it was read at and only while the lease holds, and
   * the lease, entries, ledger rows and audit rows written only when the update was — all or
   * nothing, as in `transaction`.
   */
  private async commitAtOnce(change: Change, text: string, status: string | null): Promise<CommitResult> {
    const { lease, entries, ledger, audit } = this.commitRows(change);
    const values = [
      text,
      status,
      this.marksOf(change.next),
      change.id,
      change.version,
      lease?.stage ?? null,
      lease?.key ?? null,
      lease?.token ?? null,
      this.owner,
      entries.map((entry) => entry.collection),
      entries.map((entry) => entry.id),
      entries.map((entry) => entry.body),
      ledger.map((row) => row.ledger),
      ledger.map((row) => row.key),
      ledger.map((row) => row.row),
      ledger.map((row) => row.once),
      ledger.map((row) => row.value),
      audit,
      commitToken(change),
    ];
    const { rows } = await retrying(() =>
      this.query<{ version: string | null; leased: boolean; present: boolean }>({ name: COMMIT_STATEMENT, text: this.commitStatement() }, values, 'commit'),
    );
    return this.outcome(change, rows[0]!);
  }

  /**
   * Several commits of different proposals in one statement, each as `commitAtOnce` makes it and
   * each with its own outcome: one whose version moved or whose lease was lost writes nothing,
   * and the others land. Rows are numbered by their commit (`n`). Locks are taken in one order:
   * the leases first, in key order, as `renew` locks them; then the proposals, in id order (the
   * update alone would lock them in whatever order its plan reads them, and two groups over the
   * same proposals could wait for each other until the server's deadlock check, a second later).
   */
  private async commitTogether(group: readonly Waiting[]): Promise<CommitResult[]> {
    const c = { n: [] as number[], doc: [] as string[], status: [] as (string | null)[], marks: [] as string[], id: [] as string[], version: [] as string[] };
    const leases = { stage: [] as (string | null)[], key: [] as (string | null)[], token: [] as (string | null)[] };
    const entries = { n: [] as number[], collection: [] as string[], id: [] as string[], body: [] as string[] };
    const ledger = {
      n: [] as number[],
      ledger: [] as string[],
      key: [] as (string | null)[],
      row: [] as string[],
      once: [] as (string | null)[],
      value: [] as (string | null)[],
    };
    const audit = { n: [] as number[], ordinal: [] as number[], row: [] as string[], token: [] as (string | null)[] };
    group.forEach(({ change, text, status }, n) => {
      const rows = this.commitRows(change);
      c.n.push(n);
      c.doc.push(text);
      c.status.push(status);
      c.marks.push(JSON.stringify(this.marksOf(change.next)));
      c.id.push(change.id);
      c.version.push(change.version);
      leases.stage.push(rows.lease?.stage ?? null);
      leases.key.push(rows.lease?.key ?? null);
      leases.token.push(rows.lease?.token ?? null);
      for (const entry of rows.entries) {
        entries.n.push(n);
        entries.collection.push(entry.collection);
        entries.id.push(entry.id);
        entries.body.push(entry.body);
      }
      for (const row of rows.ledger) {
        ledger.n.push(n);
        ledger.ledger.push(row.ledger);
        ledger.key.push(row.key);
        ledger.row.push(row.row);
        ledger.once.push(row.once);
        ledger.value.push(row.value);
      }
      rows.audit.forEach((row, ordinal) => {
        audit.n.push(n);
        audit.ordinal.push(ordinal);
        audit.row.push(row);
        audit.token.push(ordinal === 0 ? commitToken(change) : null);
      });
    });
    const values = [
      c.n,
      c.doc,
      c.status,
      c.marks,
      c.id,
      c.version,
      leases.stage,
      leases.key,
      leases.token,
      this.owner,
      entries.n,
      entries.collection,
      entries.id,
      entries.body,
      ledger.n,
      ledger.ledger,
      ledger.key,
      ledger.row,
      ledger.once,
      ledger.value,
      audit.n,
      audit.ordinal,
      audit.row,
      audit.token,
    ];
    const { rows } = await retrying(() =>
      this.query<{ n: number; version: string | null; leased: boolean; present: boolean }>(
        { name: GROUP_STATEMENT, text: this.groupStatement() },
        values,
        'commit',
      ),
    );
    groupedCommits.statements++;
    groupedCommits.commits += group.length;
    const byN = new Map(rows.map((row) => [Number(row.n), row]));
    return group.map(({ change }, n) => this.outcome(change, byN.get(n)!));
  }

  private groupSql: string | undefined;
  private groupStatement(): string {
    this.groupSql ??= `WITH c AS MATERIALIZED (
         SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
           AS c(n, doc, status, marks, id, version, stage, key, token)),
       lease AS MATERIALIZED (
         SELECT c.n FROM c JOIN ${this.t('leases')} l
             ON l.stage = c.stage AND l.key = c.key AND l.token = c.token::bigint AND l.owner = $10 AND l.expires_at > now()
          ORDER BY l.stage, l.key FOR UPDATE OF l),
       locked AS MATERIALIZED (
         SELECT p.id FROM ${this.t('proposals')} p
          WHERE p.id IN (SELECT id FROM c) AND (SELECT count(*) FROM lease) >= 0
          ORDER BY p.id FOR UPDATE OF p),
       upd AS (
         UPDATE ${this.t('proposals')} p
            SET doc = c.doc, status = c.status, marks = ARRAY(SELECT jsonb_array_elements_text(c.marks::jsonb)), version = p.version + 1
           FROM c JOIN locked ON locked.id = c.id
          WHERE p.id = c.id AND p.version::text = c.version AND (c.stage IS NULL OR EXISTS (SELECT 1 FROM lease WHERE lease.n = c.n))
          RETURNING c.n, p.version),
       ended AS (
         DELETE FROM ${this.t('leases')} l USING c, upd
          WHERE upd.n = c.n AND l.stage = c.stage AND l.key = c.key AND l.token = c.token::bigint AND l.owner = $10),
       entries AS (
         INSERT INTO ${this.t('entries')} (collection, id, body)
         SELECT e.collection, e.id, e.body FROM unnest($11::int[], $12::text[], $13::text[], $14::text[]) WITH ORDINALITY AS e(n, collection, id, body, o)
           JOIN upd ON upd.n = e.n ORDER BY e.o
         ON CONFLICT (collection, id) DO NOTHING),
       ledger AS (
         INSERT INTO ${this.t('ledger_rows')} (ledger, key, proposal_id, row)
         SELECT l.ledger, l.key, c.id, l.row
           FROM unnest($15::int[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[]) WITH ORDINALITY AS l(n, ledger, key, row, once, value, o)
           JOIN upd ON upd.n = l.n JOIN c ON c.n = l.n
          WHERE l.once IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${this.t('ledger_rows')} x WHERE x.ledger = l.ledger AND x.proposal_id = c.id AND (x.row::jsonb -> l.once) = l.value::jsonb)
          ORDER BY l.o),
       audit AS (
         INSERT INTO ${this.t('audit')} (id, version, ordinal, row, token)
         SELECT c.id, upd.version, a.ordinal, a.row, a.token FROM unnest($21::int[], $22::int[], $23::text[], $24::text[]) WITH ORDINALITY AS a(n, ordinal, row, token, o)
           JOIN upd ON upd.n = a.n JOIN c ON c.n = a.n ORDER BY a.o)
       SELECT c.n, (SELECT version::text FROM upd WHERE upd.n = c.n) AS version,
              EXISTS (SELECT 1 FROM lease WHERE lease.n = c.n) AS leased,
              EXISTS (SELECT 1 FROM ${this.t('proposals')} WHERE id = c.id) AS present
         FROM c`;
    return this.groupSql;
  }

  private commitSql: string | undefined;
  private commitStatement(): string {
    const lease = `$6::text IS NOT NULL AND stage = $6 AND key = $7 AND token = $8::bigint AND owner = $9`;
    this.commitSql ??= `WITH lease AS MATERIALIZED (
         SELECT 1 FROM ${this.t('leases')} WHERE ${lease} AND expires_at > now() FOR UPDATE),
       upd AS (
         UPDATE ${this.t('proposals')} SET doc = $1, status = $2, marks = $3, version = version + 1
          WHERE id = $4 AND version::text = $5 AND ($6::text IS NULL OR EXISTS (SELECT 1 FROM lease))
          RETURNING version),
       ended AS (
         DELETE FROM ${this.t('leases')} WHERE ${lease} AND EXISTS (SELECT 1 FROM upd)),
       entries AS (
         INSERT INTO ${this.t('entries')} (collection, id, body)
         SELECT e.collection, e.id, e.body FROM upd, unnest($10::text[], $11::text[], $12::text[]) AS e(collection, id, body)
         ON CONFLICT (collection, id) DO NOTHING),
       ledger AS (
         INSERT INTO ${this.t('ledger_rows')} (ledger, key, proposal_id, row)
         SELECT l.ledger, l.key, $4, l.row FROM upd, unnest($13::text[], $14::text[], $15::text[], $16::text[], $17::text[]) WITH ORDINALITY AS l(ledger, key, row, once, value, n)
          WHERE l.once IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${this.t('ledger_rows')} x WHERE x.ledger = l.ledger AND x.proposal_id = $4 AND (x.row::jsonb -> l.once) = l.value::jsonb)
          ORDER BY l.n),
       audit AS (
         INSERT INTO ${this.t('audit')} (id, version, ordinal, row, token)
         SELECT $4, upd.version, a.n - 1, a.row, CASE WHEN a.n = 1 THEN $19 END FROM upd, unnest($18::text[]) WITH ORDINALITY AS a(row, n))
       SELECT (SELECT version::text FROM upd) AS version, EXISTS (SELECT 1 FROM lease) AS leased,
              EXISTS (SELECT 1 FROM ${this.t('proposals')} WHERE id = $4) AS present`;
    return this.commitSql;
  }

  async appendLedger(ledger: string, row: Record<string, unknown>): Promise<void> {
    this.assertLedger(ledger);
    await this.ensure();
    await this.query(`INSERT INTO ${this.t('ledger_rows')} (ledger, key, proposal_id, row) VALUES ($1, $2, NULL, $3)`, [
      ledger,
      this.rowKey(row),
      JSON.stringify(row),
    ]);
  }

  async prepareDocuments(collection: string): Promise<void> {
    assertCollectionName(collection);
    await this.ensure();
  }

  async writeDocument(collection: string, name: string, document: unknown): Promise<'written' | 'exists'> {
    await this.ensure();
    const { rowCount } = await this.query(
      `INSERT INTO ${this.t('documents')} (collection, name, body) VALUES ($1, $2, $3) ON CONFLICT (collection, name) DO NOTHING`,
      [collection, name, `${JSON.stringify(document, null, 2)}\n`],
    );
    return rowCount ? 'written' : 'exists';
  }

  // ---------------------------------------------------------------- copying

  async *dump(): AsyncIterable<Dumped> {
    if (!(await this.exists())) return;
    const pages = async function* (store: PostgresStore, sql: (after: string) => [string, unknown[]], cursorOf: (row: Record<string, string>) => string) {
      let after = '';
      for (;;) {
        const [text, values] = sql(after);
        const { rows } = await store.query<Record<string, string>>(text, values);
        yield* rows;
        if (rows.length < PAGE) return;
        after = cursorOf(rows[rows.length - 1]!);
      }
    };
    for await (const row of pages(
      this,
      (after) => [`SELECT id, key, doc FROM ${this.t('proposals')} WHERE id > $1 ORDER BY id LIMIT ${PAGE}`, [after]],
      (row) => row['id']!,
    )) {
      yield { kind: 'proposal', id: row['id']!, key: row['key'] ?? null, text: row['doc']! };
    }
    for await (const row of this.audit()) yield { kind: 'audit', row };
    for (const ledger of Object.keys(this.layout.ledgers)) for await (const row of this.ledger(ledger)) yield { kind: 'ledger', ledger, row };
    const byName = (after: string): [string, unknown[]] => {
      const [collection, id] = after === '' ? ['', ''] : after.split('\u0000');
      return [
        `SELECT collection, id, body FROM ${this.t('entries')} WHERE (collection, id) > ($1, $2) ORDER BY collection, id LIMIT ${PAGE}`,
        [collection, id],
      ];
    };
    for await (const row of pages(this, byName, (row) => `${row['collection']}\u0000${row['id']}`)) {
      yield { kind: 'entry', collection: row['collection']!, id: row['id']!, text: row['body']! };
    }
    const documents = (after: string): [string, unknown[]] => {
      const [collection, name] = after === '' ? ['', ''] : after.split('\u0000');
      return [
        `SELECT collection, name, body FROM ${this.t('documents')} WHERE (collection, name) > ($1, $2) ORDER BY collection, name LIMIT ${PAGE}`,
        [collection, name],
      ];
    };
    for await (const row of pages(this, documents, (row) => `${row['collection']}\u0000${row['name']}`)) {
      yield { kind: 'document', collection: row['collection']!, name: row['name']!, text: row['body']! };
    }
  }

  async load(items: AsyncIterable<Dumped>): Promise<void> {
    if (await this.exists()) {
      const { rows } = await this.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM ${this.t('proposals')}) + (SELECT count(*) FROM ${this.t('audit')}) + (SELECT count(*) FROM ${this.t('ledger_rows')}) + (SELECT count(*) FROM ${this.t('entries')}) + (SELECT count(*) FROM ${this.t('documents')}) AS n`,
      );
      if (Number(rows[0]?.n ?? 0) > 0) throw new Error(`${this.location} is not empty`);
    }
    await this.ensure();
    // One transaction: a copy lands whole, or the destination stays empty.
    await this.transaction(async (client) => {
      const versions = new Map<string, number>();
      const proposals = new Set<string>();
      let batch: { sql: string; values: unknown[][] } | undefined;
      const flush = async () => {
        if (!batch || batch.values.length === 0) return;
        const width = batch.values[0]!.length;
        const placeholders = batch.values.map((_row, r) => `(${Array.from({ length: width }, (_v, c) => `$${r * width + c + 1}`).join(', ')})`).join(', ');
        await client.query(`${batch.sql} VALUES ${placeholders}`, batch.values.flat());
        batch = undefined;
      };
      const add = async (sql: string, row: unknown[]) => {
        if (batch && batch.sql !== sql) await flush();
        batch ??= { sql, values: [] };
        batch.values.push(row);
        if (batch.values.length >= 500) await flush();
      };
      for await (const item of items) {
        switch (item.kind) {
          case 'proposal': {
            const read = parseDocument(item.id, item.text, '1');
            const status = read.kind === 'found' && typeof read.stored.proposal['status'] === 'string' ? read.stored.proposal['status'] : null;
            const marks = read.kind === 'found' ? this.marksOf(read.stored.proposal) : [];
            proposals.add(item.id);
            await add(`INSERT INTO ${this.t('proposals')} (id, key, status, marks, doc, version)`, [item.id, item.key, status, marks, item.text, 1]);
            break;
          }
          case 'audit': {
            // Each row gets the next version of its proposal, so later commits never collide with it.
            const version = (versions.get(item.row.id) ?? 0) + 1;
            versions.set(item.row.id, version);
            await add(`INSERT INTO ${this.t('audit')} (id, version, ordinal, row)`, [item.row.id, version, 0, JSON.stringify(item.row)]);
            break;
          }
          case 'ledger': {
            // The proposal a row is about: the first field naming one (so `once` rows are found).
            const about = Object.values(item.row).find((value) => typeof value === 'string' && proposals.has(value)) ?? null;
            await add(`INSERT INTO ${this.t('ledger_rows')} (ledger, key, proposal_id, row)`, [
              item.ledger,
              this.rowKey(item.row),
              about,
              JSON.stringify(item.row),
            ]);
            break;
          }
          case 'entry':
            await add(`INSERT INTO ${this.t('entries')} (collection, id, body)`, [item.collection, item.id, item.text]);
            break;
          case 'document':
            await add(`INSERT INTO ${this.t('documents')} (collection, name, body)`, [item.collection, item.name, item.text]);
            break;
        }
      }
      await flush();
      const pending = [...versions];
      for (let i = 0; i < pending.length; i += 5000) {
        const slice = pending.slice(i, i + 5000);
        await client.query(
          `UPDATE ${this.t('proposals')} AS p SET version = u.version FROM unnest($1::text[], $2::bigint[]) AS u(id, version) WHERE p.id = u.id AND p.version < u.version`,
          [slice.map(([id]) => id), slice.map(([, version]) => version)],
        );
      }
    });
    // Statistics now, not when autovacuum gets to it: without them the planner takes the freshly
    // filled tables for nearly empty and sorts every match of a claim instead of reading the
    // status index in order. Best effort — the copy has landed by now, and statistics that cannot
    // be taken (cancelled, no privilege) are autovacuum's to take later, never a failed copy.
    await this.query(`ANALYZE ${['proposals', 'audit', 'ledger_rows', 'entries', 'leases'].map((table) => this.t(table)).join(', ')}`).catch(() => undefined);
  }

  // ---------------------------------------------------------------- leases

  async claim(stage: string, queue: Queue, max: number, ttlMs: number): Promise<Claimed> {
    await this.ensure();
    const ttl = Math.max(1, ttlMs) / 1000;
    if ('keys' in queue) {
      if (queue.keys.length === 0 || max <= 0) return { leases: [] };
      // A key already leased by someone whose lease has not expired stays theirs.
      // Retried like a commit: a lease that expires while a commit waits for it is locked by both
      // sides in opposite orders, and the server's deadlock check aborts one of them.
      const { rows } = await retrying(() =>
        this.query<{ key: string; token: string }>(
          `INSERT INTO ${this.t('leases')} AS l (stage, key, token, owner, expires_at)
           SELECT $1, k, nextval('${this.schema}.lease_tokens'), $2, now() + make_interval(secs => $3)
             FROM unnest($4::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n LIMIT $5
         ON CONFLICT (stage, key) DO UPDATE SET token = EXCLUDED.token, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
           WHERE l.expires_at <= now()
         RETURNING key, token::text AS token`,
          [stage, this.owner, ttl, queue.keys, max],
        ),
      );
      const order = new Map(queue.keys.map((key, index) => [key, index]));
      return { leases: rows.sort((a, b) => order.get(a.key)! - order.get(b.key)!).map((row) => ({ stage, key: row.key, token: row.token })) };
    }
    const values: unknown[] = [stage, this.owner, ttl, max];
    const where = this.conditions(queue.query, values, 'p')
      .map((clause) => `AND ${clause}`)
      .join(' ');
    // The candidates are picked once (a MATERIALIZED CTE), skipping rows other claims are taking
    // right now, then leased in the same statement; one more row says how far the pick went, so
    // the next claim continues after it even when a race left some picked rows to another worker.
    // The pick carries ids and versions only (whatever it must sort stays small); each document is
    // then fetched by primary key at the version the pick locked — the statement's snapshot may
    // predate a commit the lock waited for, and then no document comes and the read that follows
    // fetches it. A candidate's lease is looked up by its key, row by row (a scalar subquery, which
    // the planner never turns into a join): as an anti-join it was planned, once the lease table
    // had grown, as a hash of every lease row of the stage — each released one too, until vacuum
    // — so each claim read them all (1,100 index entries a claim, on average, over a run of 2,000
    // proposals by four workers), a cost that grows with the run.
    // Retried as above: it locks proposals, then leases that may have expired under a waiting commit.
    const { rows } = await retrying(() =>
      this.query<{ key: string; token: string; doc: string | null; version: string | null }>(
        `WITH picked AS MATERIALIZED (
         SELECT p.id, p.version FROM ${this.t('proposals')} p
          WHERE (SELECT l.expires_at > now() FROM ${this.t('leases')} l WHERE l.stage = $1 AND l.key = p.id) IS NOT TRUE ${where}
          ORDER BY p.id LIMIT $4
          FOR UPDATE OF p SKIP LOCKED),
       leased AS (
         INSERT INTO ${this.t('leases')} AS l (stage, key, token, owner, expires_at)
           SELECT $1, picked.id, nextval('${this.schema}.lease_tokens'), $2, now() + make_interval(secs => $3) FROM picked
         ON CONFLICT (stage, key) DO UPDATE SET token = EXCLUDED.token, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
           WHERE l.expires_at <= now()
         RETURNING key, token::text AS token)
       SELECT leased.key, leased.token, picked.version::text AS version,
              (SELECT d.doc FROM ${this.t('proposals')} d WHERE d.id = picked.id AND d.version = picked.version) AS doc
         FROM leased JOIN picked ON picked.id = leased.key
       UNION ALL
       SELECT '', (SELECT count(*)::text || ':' || coalesce(max(id), '') FROM picked), NULL, NULL`,
        values,
      ),
    );
    // The documents come with the claim (read under its row locks): the read that follows each
    // lease is answered from them, one round trip less per unit.
    for (const row of rows)
      if (row.key !== '' && row.doc !== null && row.version !== null) this.claimed.set(row.key, { doc: row.doc, version: row.version, at: Date.now() });
    const meta = rows.find((row) => row.key === '')!.token;
    const [picked, last] = [Number(meta.slice(0, meta.indexOf(':'))), meta.slice(meta.indexOf(':') + 1)];
    const leases = rows
      .filter((row) => row.key !== '')
      .map((row) => ({ stage, key: row.key, token: row.token }))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
    // Fewer picked than asked: the query is exhausted (what others hold is reported by `held`).
    return picked < max ? { leases } : { leases, next: last };
  }

  async renew(leases: readonly Lease[], ttlMs: number): Promise<Lease[]> {
    if (leases.length === 0) return [];
    const { rows } = await this.query<{ stage: string; key: string }>(
      // Locked in key order first, as a group commit locks them: the two never wait in a cycle.
      `WITH mine AS MATERIALIZED (
         SELECT l.stage, l.key FROM ${this.t('leases')} l JOIN unnest($2::text[], $3::text[], $4::bigint[]) AS u(stage, key, token)
             ON l.stage = u.stage AND l.key = u.key AND l.token = u.token
          WHERE l.owner = $5 AND l.expires_at > now()
          ORDER BY l.stage, l.key FOR UPDATE OF l)
       UPDATE ${this.t('leases')} AS l SET expires_at = now() + make_interval(secs => $1) FROM mine
        WHERE l.stage = mine.stage AND l.key = mine.key
        RETURNING l.stage, l.key`,
      [Math.max(1, ttlMs) / 1000, leases.map((lease) => lease.stage), leases.map((lease) => lease.key), leases.map((lease) => lease.token), this.owner],
    );
    const kept = new Set(rows.map((row) => `${row.stage}\u0000${row.key}`));
    return leases.filter((lease) => kept.has(`${lease.stage}\u0000${lease.key}`));
  }

  async release(given: readonly Lease[]): Promise<void> {
    for (const lease of given) this.claimed.delete(lease.key);
    const leases = given.filter((lease) => !this.ended.delete(leaseKey(lease)));
    if (leases.length === 0 || !(await this.exists())) return;
    await this.query(
      `DELETE FROM ${this.t('leases')} AS l USING unnest($1::text[], $2::text[], $3::bigint[]) AS u(stage, key, token)
        WHERE l.stage = u.stage AND l.key = u.key AND l.token = u.token AND l.owner = $4`,
      [leases.map((lease) => lease.stage), leases.map((lease) => lease.key), leases.map((lease) => lease.token), this.owner],
    );
  }

  async held(stage: string, queue: Queue): Promise<string[]> {
    if (!(await this.exists())) return [];
    if ('keys' in queue) {
      const { rows } = await this.query<{ key: string }>(
        `SELECT key FROM ${this.t('leases')} WHERE stage = $1 AND key = ANY($2) AND owner <> $3 ORDER BY key`,
        [stage, queue.keys, this.owner],
      );
      return rows.map((row) => row.key);
    }
    const values: unknown[] = [stage, this.owner];
    const where = this.conditions(queue.query, values, 'p')
      .map((clause) => `AND ${clause}`)
      .join(' ');
    const { rows } = await this.query<{ key: string }>(
      `SELECT l.key FROM ${this.t('leases')} l JOIN ${this.t('proposals')} p ON p.id = l.key
        WHERE l.stage = $1 AND l.owner <> $2 ${where} ORDER BY l.key`,
      values,
    );
    return rows.map((row) => row.key);
  }

  /** Make a lease look expired (tests of a dead worker), by the database's clock. */
  async expireLease(lease: Lease): Promise<void> {
    await this.query(`UPDATE ${this.t('leases')} SET expires_at = now() - interval '1 second' WHERE stage = $1 AND key = $2`, [lease.stage, lease.key]);
  }

  /** Put raw text where a proposal is (tests of malformed documents: only a hand-edited database has them). */
  async putRaw(id: string, text: string): Promise<void> {
    await this.ensure();
    await this.query(`INSERT INTO ${this.t('proposals')} (id, key, status, marks, doc, version) VALUES ($1, NULL, NULL, '{}', $2, 1)`, [id, text]);
  }
}

async function migrateToV1(client: PoolClient, t: (table: string) => string, schema: string): Promise<void> {
  const statements = [
    // The document text as written (key order kept); status, marks and key beside it for indexes.
    `CREATE TABLE ${t('proposals')} (id text PRIMARY KEY, key text UNIQUE, status text, marks text[] NOT NULL DEFAULT '{}', doc text NOT NULL, version bigint NOT NULL)`,
    // status counts and keyset listings by status: an index-only scan on (status, id).
    `CREATE INDEX proposals_status_id ON ${t('proposals')} (status, id)`,
    `CREATE TABLE ${t('audit')} (seq bigserial PRIMARY KEY, id text NOT NULL, version bigint NOT NULL, ordinal int NOT NULL, row text NOT NULL, UNIQUE (id, version, ordinal))`,
    `CREATE TABLE ${t('ledger_rows')} (seq bigserial PRIMARY KEY, ledger text NOT NULL, key text, proposal_id text, row text NOT NULL)`,
    `CREATE INDEX ledger_rows_key ON ${t('ledger_rows')} (ledger, key)`,
    `CREATE INDEX ledger_rows_proposal ON ${t('ledger_rows')} (ledger, proposal_id)`,
    `CREATE TABLE ${t('entries')} (collection text NOT NULL, id text NOT NULL, body text NOT NULL, PRIMARY KEY (collection, id))`,
    `CREATE TABLE ${t('documents')} (collection text NOT NULL, name text NOT NULL, body text NOT NULL, PRIMARY KEY (collection, name))`,
    `CREATE TABLE ${t('leases')} (stage text NOT NULL, key text NOT NULL, token bigint NOT NULL, owner text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (stage, key))`,
    `CREATE SEQUENCE "${schema}".lease_tokens`,
    `CREATE TABLE ${t('cache')} (key text PRIMARY KEY, value text NOT NULL)`,
  ];
  for (const statement of statements) await client.query(statement);
}

/** Version 2: a commit's first audit row carries the commit's own token, which its read-back looks for (`landed`). */
async function migrateToV2(client: PoolClient, t: (table: string) => string): Promise<void> {
  await client.query(`ALTER TABLE ${t('audit')} ADD COLUMN IF NOT EXISTS token text`);
}

/**
 * One promise that concurrent callers share. A failed one is forgotten, so the next caller asks
 * again instead of getting the same failure for as long as the store lives.
 */
class Shared<T> {
  private pending: Promise<T> | undefined;
  constructor(private readonly start: () => Promise<T>) {}

  get(): Promise<T> {
    const asked = (this.pending ??= this.start());
    return asked.catch((error: unknown) => {
      if (this.pending === asked) this.pending = undefined;
      throw error;
    });
  }

  /** Ask again next time (after an answer that may change). */
  forget(): void {
    this.pending = undefined;
  }
}
