/**
 * The derived index of the pool: the ranking inputs of every proposal in use, so `pool top` and
 * `pool prune` never read every proposal (SPEC §9: 100,000 in use, top under 500 ms warm).
 *
 * It lives in the store's cache (never required for correctness), as bytes (index-bytes.ts), in a
 * base — every row, with the audit cursor it is current to — plus a small delta of the rows
 * changed since, so a command after a few outcomes rewrites kilobytes, not the whole index. Each
 * use brings it up to date from `store.changes(cursor)`, re-reading only the proposals committed
 * since; when the store cannot tell (`all`), or on `--rebuild`, it is rebuilt from a listing. A
 * proposal edited by hand outside pipeline is seen once it is committed again, re-read as a
 * result, or the index is rebuilt (`pool top` rebuilds it itself when too many rows were).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Store } from '../store/types.js';
import { EMPTY_COLUMNS, findRow, idAt, rankColumns, rowAt, toColumns, type Columns } from './columns.js';
import { decodeIndex, encodeIndex } from './index-bytes.js';
import type { PoolConfig, RankingConfig } from './config.js';
import type { Filters, PoolRow, Scored } from './ranking.js';
import { rowOf, sameRow } from './rows.js';
import { isUlid } from '../util/ids.js';

/** Past this many changed rows, the delta is folded into a new base. */
const DELTA_LIMIT = 2000;
/**
 * The most bytes read for a base, and for a delta (at most DELTA_LIMIT rows: a larger one was
 * not written by `save`, and is not read). A base of 1,000,000 rows takes about 74 MB.
 */
const BASE_MAX_BYTES = 256 * 1024 * 1024;
const DELTA_MAX_BYTES = 16 * 1024 * 1024;
/** Past this many changed proposals, a listing is cheaper than reading each. */
const REREAD_LIMIT = 10_000;
/** The index's layout in the cache (4: bytes; 3 and before: JSON, under other keys, never read). */
export const INDEX_FORMAT = 4;

/** What a base keeps besides its columns. */
interface BaseMeta {
  v: number;
  nonce: string;
  cursor: string;
}

/** What a delta keeps besides its columns: the base it applies to, and the rows gone since. */
interface DeltaMeta {
  v: number;
  base: string;
  cursor: string;
  removed: string[];
}

export interface IndexLoad {
  index: PoolIndex;
  /** Was it rebuilt from a listing (no usable cache, the store could not tell what changed, or asked)? */
  rebuilt: boolean;
  /** Proposals that could not be read, by id (reported, never fatal). */
  malformed: string[];
}

/** The cache keys of a pool: a change of what the rows are made of is a new index. */
function keysOf(pool: Pick<PoolConfig, 'state' | 'fields'>): { base: string; delta: string } {
  const digest = createHash('sha256')
    .update(JSON.stringify({ v: INDEX_FORMAT, state: pool.state, fields: pool.fields }))
    .digest('hex')
    .slice(0, 16);
  return { base: `pool-index:${digest}:base`, delta: `pool-index:${digest}:delta` };
}

export class PoolIndex {
  /** The rows as of the base, in columns. */
  private base: Columns = EMPTY_COLUMNS;
  /** Rows changed since the base (undefined: gone from the pool). */
  private readonly overlay = new Map<string, PoolRow | undefined>();
  private nonce = '';
  private cursor = '';
  private baseDirty = false;
  private deltaDirty = false;

  private constructor(
    private readonly store: Store,
    private readonly pool: Pick<PoolConfig, 'state' | 'fields'>,
  ) {}

  /** Load the index and bring it up to date with the store (or rebuild it). */
  static async open(store: Store, pool: Pick<PoolConfig, 'state' | 'fields'>, options: { rebuild?: boolean } = {}): Promise<IndexLoad> {
    const index = new PoolIndex(store, pool);
    const malformed: string[] = [];
    const loaded = !options.rebuild && (await index.load());
    if (!loaded) {
      await index.rebuild(malformed);
      return { index, rebuilt: true, malformed };
    }
    const changes = await store.changes(index.cursor);
    if (changes.all || changes.ids.length > REREAD_LIMIT) {
      await index.rebuild(malformed);
      return { index, rebuilt: true, malformed };
    }
    for (const id of changes.ids) {
      const read = await store.read(id);
      if (read.kind === 'malformed' && index.get(id)) malformed.push(id);
      index.put(id, read.kind === 'found' ? rowOf(id, read.stored.proposal, pool) : undefined);
    }
    if (changes.cursor !== index.cursor) {
      index.cursor = changes.cursor;
      index.deltaDirty = true;
    }
    return { index, rebuilt: false, malformed };
  }

  /** The row of a proposal, when it is in the pool. */
  get(id: string): PoolRow | undefined {
    if (this.overlay.has(id)) return this.overlay.get(id);
    const at = findRow(this.base, id);
    return at < 0 ? undefined : rowAt(this.base, at);
  }

  /** The rows (those whose counters pass `where`, when given), as objects. */
  *rows(where?: (hits: number, misses: number) => boolean): Iterable<PoolRow> {
    for (let i = 0; i < this.base.count; i++) {
      if (where && !where(this.base.hits[i]!, this.base.misses[i]!)) continue;
      if (!this.overlay.has(idAt(this.base, i))) yield rowAt(this.base, i);
    }
    for (const row of this.overlay.values()) if (row && (!where || where(row.hits, row.misses))) yield row;
  }

  /** The `k` best rows for `filters` (see rankTop). */
  rank(filters: Filters, now: number, ranking: RankingConfig, k: number): Scored[] {
    return rankColumns(this.base, this.overlay, filters, now, ranking, k);
  }

  /** Set (or, with undefined, remove) the row of a proposal: a re-read found it changed. */
  put(id: string, row: PoolRow | undefined): void {
    if (sameRow(this.get(id), row)) return;
    this.overlay.set(id, row);
    this.deltaDirty = true;
  }

  /**
   * Keep what changed for the next command. Best effort: a store that cannot be written (read-only
   * commands work there too) or has never been written keeps no index, and nothing is created in it.
   */
  async save(): Promise<void> {
    if (!this.baseDirty && !this.deltaDirty) return;
    if (!(await this.store.exists())) return;
    const keys = keysOf(this.pool);
    try {
      if (this.baseDirty || this.overlay.size > DELTA_LIMIT) {
        this.base = toColumns(this.rows());
        this.overlay.clear();
        this.nonce = randomUUID();
        const base: BaseMeta = { v: INDEX_FORMAT, nonce: this.nonce, cursor: this.cursor };
        await this.store.cache.putBytes(keys.base, encodeIndex({ ...base }, this.base));
      } else {
        const rows = [...this.overlay.values()].filter((row): row is PoolRow => row !== undefined);
        const removed = [...this.overlay].filter(([, row]) => row === undefined).map(([id]) => id);
        const delta: DeltaMeta = { v: INDEX_FORMAT, base: this.nonce, cursor: this.cursor, removed };
        await this.store.cache.putBytes(keys.delta, encodeIndex({ ...delta }, toColumns(rows)));
      }
      this.baseDirty = false;
      this.deltaDirty = false;
    } catch {
      // A cache that cannot be written only costs the next command a rebuild.
    }
  }

  /** The cached base and its delta; false when there is no usable base. */
  private async load(): Promise<boolean> {
    const keys = keysOf(this.pool);
    const stored = await this.read(keys.base, BASE_MAX_BYTES);
    const base = stored?.meta as Partial<BaseMeta> | undefined;
    if (!stored || !base || base.v !== INDEX_FORMAT || typeof base.nonce !== 'string' || typeof base.cursor !== 'string') return false;
    this.base = stored.columns;
    this.nonce = base.nonce;
    this.cursor = base.cursor;
    const storedDelta = await this.read(keys.delta, DELTA_MAX_BYTES);
    const delta = storedDelta?.meta as Partial<DeltaMeta> | undefined;
    // A delta written on another base (an older one, or a newer one another command wrote) is not ours.
    if (!storedDelta || !delta || delta.v !== INDEX_FORMAT || delta.base !== base.nonce || typeof delta.cursor !== 'string' || !Array.isArray(delta.removed))
      return true;
    const changed = storedDelta.columns;
    if (changed.count + delta.removed.length > DELTA_LIMIT || !delta.removed.every(isUlid)) return true;
    for (let i = 0; i < changed.count; i++) this.overlay.set(idAt(changed, i), rowAt(changed, i));
    for (const id of delta.removed) this.overlay.set(id, undefined);
    this.cursor = delta.cursor;
    return true;
  }

  /** An index kept under `key`, when the cache has a well-formed one. */
  private async read(key: string, maxBytes: number): Promise<ReturnType<typeof decodeIndex>> {
    const bytes = await this.store.cache.getBytes(key, maxBytes).catch(() => undefined);
    return bytes === undefined ? undefined : decodeIndex(bytes);
  }

  /** Every proposal in the pool's state, from a listing. The cursor is taken first: later commits are seen next time. */
  private async rebuild(malformed: string[]): Promise<void> {
    const { cursor } = await this.store.changes();
    const rows: PoolRow[] = [];
    for await (const listed of this.store.list({ status: this.pool.state })) {
      if (listed.kind === 'malformed') {
        malformed.push(listed.id);
        continue;
      }
      const row = rowOf(listed.stored.id, listed.stored.proposal, this.pool);
      if (row) rows.push(row);
    }
    this.base = toColumns(rows);
    this.overlay.clear();
    this.cursor = cursor;
    this.baseDirty = true;
  }
}
