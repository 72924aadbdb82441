/**
 * The shipped store: a directory of JSON files (SPEC §4).
 *
 *   proposals/<id>.json   one file per proposal, every status, never deleted
 *   <collection>/<id>.json  entries written once (the pool: approved/)
 *   <ledger>.jsonl        append-only ledgers, events.jsonl the audit log
 *   cache/                validated model answers
 *   .index/ .locks/ .claims/   caches and coordination; safe to delete when nothing runs
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { LedgerRow, Proposal } from '../lifecycle/effects.js';
import { isUlid } from '../util/ids.js';
import { isObject } from '../util/json-path.js';
import { appendLine, readFrom, readJsonLines, readTextIfExists, sweepTemps, writeFileAtomic } from './files.js';
import { isAlive, SELF, type ProcessIdentity } from './process-identity.js';
import { OwnerFiles } from './owner-files.js';
import { readAuditIndex, type AuditMemo } from './audit-index.js';
import { scanProposals } from './proposal-index.js';
import {
  serializeProposal,
  type AuditRow,
  type Claim,
  type CommitResult,
  type Counts,
  type CreateResult,
  type Listing,
  type ReadResult,
  type Store,
  type Stored,
} from './types.js';

export interface FileStoreOptions {
  dir: string;
  /** Ledger name → file name (e.g. declined → declined.jsonl). */
  ledgers: Readonly<Record<string, string>>;
  /** Top-level fields whose presence the status index records (e.g. a promotion stamp). */
  marks?: readonly string[];
  /** How long a claim or lock of a process on another host lasts without renewal (ms). */
  leaseMs?: number;
}

const AUDIT_FILE = 'events.jsonl';

function assertId(id: string): void {
  // Callers validate ids for the user's benefit; this guard keeps any path out of the store.
  if (!isUlid(id)) throw new Error(`invalid id: ${JSON.stringify(id)}`);
}

function keyFileName(key: string): string {
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/.test(key) ? key : `~${createHash('sha256').update(key).digest('hex')}`;
}

export class FileStore implements Store {
  readonly location: string;
  private readonly proposalsDir: string;
  private readonly ledgers: Readonly<Record<string, string>>;
  private readonly marks: readonly string[];
  private readonly made = new Set<string>();
  /** Per ledger file and field: the values seen so far and how far the file was read. */
  private readonly auditMemo: AuditMemo = { unsaved: 0 };
  private readonly ledgerIndex = new Map<string, { offset: number; ino: number; values: Set<string> }>();
  private readonly owners: OwnerFiles;

  constructor(options: FileStoreOptions) {
    this.location = path.resolve(options.dir);
    this.proposalsDir = path.join(this.location, 'proposals');
    this.ledgers = options.ledgers;
    this.marks = options.marks ?? [];
    this.owners = new OwnerFiles(path.join(this.location, '.owners'), options.leaseMs);
  }

  pathOf(collection: string, id?: string): string {
    const dir = path.join(this.location, collection);
    if (id === undefined) return dir;
    assertId(id);
    return path.join(dir, `${id}.json`);
  }

  private async ensureDir(dir: string): Promise<void> {
    if (this.made.has(dir)) return;
    await fs.mkdir(dir, { recursive: true });
    this.made.add(dir);
  }

  private ledgerFile(ledger: string): string {
    const name = ledger === 'events' ? AUDIT_FILE : this.ledgers[ledger];
    if (name === undefined) throw new Error(`unknown ledger "${ledger}"`);
    return path.join(this.location, name);
  }

  async read(id: string): Promise<ReadResult> {
    assertId(id);
    const text = await readTextIfExists(this.pathOf('proposals', id));
    if (text === undefined) return { kind: 'missing' };
    return parseStored(id, text);
  }

  private async scan() {
    return scanProposals(this.proposalsDir, path.join(this.location, '.index', 'proposals.tsv'), this.marks);
  }

  async ids(status: string, options: { without?: string } = {}): Promise<{ ids: string[]; malformed: string[] }> {
    const scan = await this.scan();
    let mask = 0;
    if (options.without !== undefined) {
      const bit = this.marks.indexOf(options.without);
      if (bit < 0) throw new Error(`the store does not index the field "${options.without}"`);
      mask = 1 << bit;
    }
    const ids: string[] = [];
    const malformed: string[] = [];
    scan.ids.forEach((id, i) => {
      const current = scan.statuses[i];
      if (current === null) malformed.push(id);
      else if (current === status && (scan.marks[i]! & mask) === 0) ids.push(id);
    });
    return { ids, malformed };
  }

  async list(status?: string): Promise<Listing> {
    const scan = await this.scan();
    const wanted = scan.ids.filter((_id, i) => scan.statuses[i] !== null && (status === undefined || scan.statuses[i] === status));
    const malformed = scan.ids.filter((_id, i) => scan.statuses[i] === null);
    const items: Stored[] = [];
    for (const id of wanted) {
      const result = await this.read(id);
      if (result.kind === 'malformed') malformed.push(id);
      else if (result.kind === 'found' && (status === undefined || result.stored.proposal['status'] === status)) items.push(result.stored);
    }
    return { items, malformed: [...new Set(malformed)].sort() };
  }

  async counts(states: readonly string[]): Promise<Counts> {
    const scan = await this.scan();
    const counts: Record<string, number> = Object.fromEntries(states.map((state) => [state, 0]));
    const unknown: Record<string, number> = {};
    const malformed: string[] = [];
    scan.ids.forEach((id, i) => {
      const status = scan.statuses[i];
      if (status === null || status === undefined) malformed.push(id);
      else if (Object.prototype.hasOwnProperty.call(counts, status)) counts[status]!++;
      else unknown[status] = (unknown[status] ?? 0) + 1;
    });
    return { counts, malformed, unknown };
  }

  async statuses(): Promise<{ byId: Map<string, { status: string; marked: string[] }>; malformed: string[] }> {
    const scan = await this.scan();
    const byId = new Map<string, { status: string; marked: string[] }>();
    const malformed: string[] = [];
    scan.ids.forEach((id, i) => {
      const status = scan.statuses[i];
      if (status === null || status === undefined) malformed.push(id);
      else byId.set(id, { status, marked: this.marks.filter((_field, bit) => (scan.marks[i]! & (1 << bit)) !== 0) });
    });
    return { byId, malformed };
  }

  async keyOwner(key: string): Promise<string | undefined> {
    const marker = path.join(this.location, '.index', 'keys', keyFileName(key));
    const text = await readTextIfExists(marker);
    if (text === undefined) return undefined;
    const owner = parseKeyMarker(text);
    if (!owner) return undefined;
    if (await readTextIfExists(this.pathOf('proposals', owner.id)) !== undefined) return owner.id;
    // The marker's proposal was never written: its creator died, or is still writing it.
    if (isAlive(owner)) return owner.id;
    await fs.unlink(marker).catch(() => {});
    return undefined;
  }

  async create(proposal: Proposal & { id: string }, key: string, audit: AuditRow): Promise<CreateResult> {
    assertId(proposal.id);
    const keysDir = path.join(this.location, '.index', 'keys');
    await this.ensureDir(keysDir);
    await this.ensureDir(this.proposalsDir);
    const marker = path.join(keysDir, keyFileName(key));
    for (let attempt = 0; ; attempt++) {
      try {
        await writeFileAtomic(marker, JSON.stringify({ id: proposal.id, key, ...SELF }), { exclusive: true });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw error;
        const existing = await this.keyOwner(key);
        if (existing !== undefined) return { ok: false, reason: 'key_exists', existing };
      }
    }
    const text = serializeProposal(proposal);
    await this.locked(proposal.id, async () => {
      await writeFileAtomic(this.pathOf('proposals', proposal.id), text, { exclusive: true });
      await this.appendAudit(audit);
    });
    return { ok: true, version: text };
  }

  /** Run `fn` holding the proposal's commit lock. */
  async locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    assertId(id);
    const locks = path.join(this.location, '.locks');
    await this.ensureDir(locks);
    const lock = await this.owners.acquire(path.join(locks, `${id}.lock`));
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  async commit(id: string, version: string, next: Proposal, audit: AuditRow | null, rows: readonly LedgerRow[]): Promise<CommitResult> {
    return this.locked(id, async () => {
      const current = await readTextIfExists(this.pathOf('proposals', id));
      if (current === undefined) return { ok: false, reason: 'missing' } as const;
      if (current !== version) return { ok: false, reason: 'changed' } as const;
      const text = serializeProposal(next);
      await writeFileAtomic(this.pathOf('proposals', id), text);
      // Inside the lock: a repair that holds the lock sees the file and its rows together.
      if (audit) await this.appendAudit(audit);
      for (const row of rows) await this.appendLedger(row.ledger, row.row);
      return { ok: true, version: text } as const;
    });
  }

  async appendLedger(ledger: string, row: Record<string, unknown>): Promise<void> {
    await this.ensureDir(this.location);
    await appendLine(this.ledgerFile(ledger), row);
  }

  async readLedger(ledger: string): Promise<Record<string, unknown>[]> {
    return (await readJsonLines(this.ledgerFile(ledger))).rows;
  }

  async ledgerHas(ledger: string, field: string, value: unknown): Promise<boolean> {
    const file = this.ledgerFile(ledger);
    const key = `${file}\u0000${field}`;
    const stat = await fs.stat(file).catch(() => undefined);
    let index = this.ledgerIndex.get(key);
    // Ledgers only grow; a file that shrank or was replaced is read again from the start.
    if (!index || !stat || stat.size < index.offset || stat.ino !== index.ino) {
      index = { offset: 0, ino: stat?.ino ?? 0, values: new Set() };
      this.ledgerIndex.set(key, index);
    }
    // Read only what was appended since the last question (by any process).
    const tail = await readFrom(file, index.offset);
    const end = tail.lastIndexOf('\n') + 1;
    for (const line of tail.slice(0, end).split('\n')) {
      if (!line) continue;
      try {
        const row = JSON.parse(line) as Record<string, unknown>;
        if (row && typeof row === 'object') index.values.add(JSON.stringify(row[field] ?? null));
      } catch {
        // a torn line is not a row
      }
    }
    index.offset += Buffer.byteLength(tail.slice(0, end), 'utf8');
    return index.values.has(JSON.stringify(value ?? null));
  }

  async appendAudit(row: AuditRow): Promise<void> {
    await this.ensureDir(this.location);
    await appendLine(path.join(this.location, AUDIT_FILE), row);
  }

  async readAudit(): Promise<AuditRow[]> {
    return (await readJsonLines(path.join(this.location, AUDIT_FILE))).rows as unknown as AuditRow[];
  }

  async lastAudits(options: { save?: boolean } = {}): Promise<Map<string, { event: string; to: string }>> {
    return readAuditIndex(path.join(this.location, AUDIT_FILE), path.join(this.location, '.index', 'audit.tsv'), this.auditMemo, options.save);
  }

  async lastAudit(id: string): Promise<AuditRow | undefined> {
    // Scan backwards from the end: a proposal's latest row is usually recent.
    const file = path.join(this.location, AUDIT_FILE);
    let handle;
    try {
      handle = await fs.open(file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const needle = `"id":${JSON.stringify(id)}`;
      const { size } = await handle.stat();
      const chunk = 1 << 20;
      let position = size;
      let carry = '';
      while (position > 0) {
        const start = Math.max(0, position - chunk);
        const buffer = Buffer.alloc(position - start);
        await handle.read(buffer, 0, buffer.length, start);
        position = start;
        const text = buffer.toString('utf8') + carry;
        const first = start === 0 ? 0 : text.indexOf('\n') + 1;
        carry = text.slice(0, first);
        const lines = text.slice(first).split('\n');
        for (let i = lines.length - 1; i >= 0; i--) {
          const line = lines[i]!;
          if (!line.includes(needle)) continue;
          try {
            const row = JSON.parse(line) as AuditRow;
            if (row.id === id) return row;
          } catch {
            // a torn line
          }
        }
      }
      return undefined;
    } finally {
      await handle.close();
    }
  }

  async claim(stage: string, key: string): Promise<Claim | null> {
    if (!/^[a-z][a-z0-9_-]*$/.test(stage)) throw new Error(`invalid stage name: ${JSON.stringify(stage)}`);
    const dir = path.join(this.location, '.claims', stage);
    await this.ensureDir(dir);
    return this.owners.tryAcquire(path.join(dir, isUlid(key) ? key : keyFileName(key)));
  }

  async readEntry(collection: string, id: string): Promise<unknown | undefined> {
    const text = await readTextIfExists(this.pathOf(collection, id));
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return null;
    }
  }

  async writeEntry(collection: string, id: string, entry: unknown): Promise<'written' | 'exists'> {
    await this.ensureDir(this.pathOf(collection));
    try {
      await writeFileAtomic(this.pathOf(collection, id), `${JSON.stringify(entry, null, 2)}\n`, { exclusive: true });
      return 'written';
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
      throw error;
    }
  }

  async sweep(): Promise<number> {
    const subdirs = await fs.readdir(this.location, { withFileTypes: true }).catch(() => []);
    const claims = await fs.readdir(path.join(this.location, '.claims')).catch(() => []);
    const dirs = [
      ...subdirs.filter((entry) => entry.isDirectory()).map((entry) => path.join(this.location, entry.name)),
      path.join(this.location, '.index', 'keys'),
      ...claims.map((stage) => path.join(this.location, '.claims', stage)),
    ];
    return (await sweepTemps(dirs)) + this.owners.sweep();
  }

  async cacheGet(key: string): Promise<unknown | undefined> {
    const text = await readTextIfExists(path.join(this.location, 'cache', `${cacheName(key)}.json`));
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return undefined;
    }
  }

  async cachePut(key: string, value: unknown): Promise<void> {
    const dir = path.join(this.location, 'cache');
    await this.ensureDir(dir);
    // Through the thread pool, not synchronously: a cache write must not stall answers in flight.
    const target = path.join(dir, `${cacheName(key)}.json`);
    const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
    await fs.writeFile(temp, JSON.stringify(value));
    await fs.rename(temp, target).catch(async (error: unknown) => {
      await fs.unlink(temp).catch(() => {});
      throw error;
    });
  }
}

function cacheName(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

function parseKeyMarker(text: string): ({ id: string } & Partial<ProcessIdentity>) | undefined {
  try {
    const value = JSON.parse(text) as { id?: unknown } & Partial<ProcessIdentity>;
    return typeof value.id === 'string' && isUlid(value.id) && typeof value.pid === 'number' ? { ...value, id: value.id } : undefined;
  } catch {
    return undefined;
  }
}

/** Parse a proposal file: anything but a JSON object is malformed. */
export function parseStored(id: string, text: string): ReadResult {
  if (text.trim() === '') return { kind: 'malformed', reason: 'empty file' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: 'malformed', reason: `not valid JSON (${(error as Error).message.replace(/^JSON\.parse: /, '')})` };
  }
  if (!isObject(value)) return { kind: 'malformed', reason: 'not a JSON object' };
  return { kind: 'found', stored: { id, proposal: value, version: text } };
}
