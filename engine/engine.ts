/**
 * The engine: a loaded pipeline over a store, with the clock and the id generator injected.
 * Every change to a proposal goes through `apply` (a machine event) or `create`, so refusals,
 * audit rows, ledger rows and crash repairs behave the same from the CLI, a run or a test.
 */
import type { Env } from './config/interpolate.js';
import type { Pipeline } from './config/load.js';
import { formatFindings } from './config/findings.js';
import type { LedgerRow, Proposal } from './lifecycle/effects.js';
import { decide, type Refusal } from './lifecycle/decide.js';
import type { Transition } from './lifecycle/machine.js';
import { refused, type Outcome } from './outcome.js';
import type { AuditRow, Store, Stored } from './store/types.js';
import { isUlid, ulidGenerator, type IdGenerator } from './util/ids.js';
import { formatTimestamp, systemClock, type Clock } from './util/time.js';

export type Actor = AuditRow['actor'];

export interface EngineOptions {
  pipeline: Pipeline;
  store: Store;
  clock?: Clock;
  ids?: IdGenerator;
  /** The environment (secret file locations, provider keys). Default: process.env. */
  env?: Env;
}

export interface ApplyOptions {
  stage: string;
  actor: Actor;
  /** Checks run after the proposal is read and before its status is looked at. */
  before?: (stored: Stored) => Refusal | undefined;
  /** Only commit if the proposal is still exactly this version (a run's claim). */
  expectVersion?: string;
  /** Set on the one re-decision after a lost race. */
  retried?: boolean;
}

export type ReadOutcome = { ok: true; stored: Stored } | { ok: false; outcome: Outcome };

export class Engine {
  readonly pipeline: Pipeline;
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly env: Env;

  constructor(options: EngineOptions) {
    this.env = options.env ?? process.env;
    this.pipeline = options.pipeline;
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.ids = options.ids ?? ulidGenerator();
  }

  now(): string {
    return formatTimestamp(this.clock());
  }

  /** Read one proposal, refusing a malformed id before the file system is touched. */
  async read(id: string): Promise<ReadOutcome> {
    if (!isUlid(id)) return { ok: false, outcome: refused('invalid_id', `invalid id: ${JSON.stringify(id)} is not a ULID`) };
    const result = await this.store.read(id);
    if (result.kind === 'missing') return { ok: false, outcome: refused('not_found', `${id}: not found`, undefined, id) };
    if (result.kind === 'malformed') {
      return { ok: false, outcome: refused('malformed', `${id}: the proposal file is malformed (${result.reason}); it was left as it is`, undefined, id) };
    }
    return { ok: true, stored: result.stored };
  }

  /** Apply a machine event to one proposal: commit, idempotent repeat, or refusal. */
  async apply(id: string, event: string, args: Record<string, unknown>, options: ApplyOptions): Promise<Outcome> {
    const read = await this.read(id);
    if (!read.ok) return read.outcome;
    return this.applyTo(read.stored, event, args, options);
  }

  async applyTo(stored: Stored, event: string, args: Record<string, unknown>, options: ApplyOptions): Promise<Outcome> {
    const { id, proposal } = stored;
    if (options.expectVersion !== undefined && options.expectVersion !== stored.version) {
      return refused('changed', `${id} changed while it was being processed`, undefined, id);
    }
    const early = options.before?.(stored);
    if (early) return { kind: 'refused', id, code: early.code, message: early.message, ...(early.details ? { details: early.details } : {}) };
    const now = this.now();
    const decision = decide(this.pipeline.lifecycle, {
      proposal,
      event,
      args,
      now,
      label: id,
      ensure: (schema, next) => formatFindings(this.pipeline.schemas.check(schema, next)),
    });
    if (decision.kind === 'refused') return { kind: 'refused', id, code: decision.code, message: decision.message, ...(decision.details ? { details: decision.details } : {}) };
    if (decision.kind === 'repeat') {
      await this.repair(stored, decision.entering, decision.rows, options);
      const status = String(proposal['status']);
      const message = decision.entering ? `${id} is already ${status}; nothing changed` : `${id} stays ${status}; nothing written`;
      return { kind: 'unchanged', id, event, status, proposal, message };
    }
    const audit: AuditRow = { at: now, id, event, from: decision.from, to: decision.to, stage: options.stage, actor: options.actor };
    const result = await this.store.commit(id, stored.version, decision.proposal, audit, decision.rows);
    if (!result.ok && result.reason === 'changed' && options.actor === 'cli' && !options.retried) {
      // A person lost a race: decide again on the proposal as it is now, so a refusal names its status.
      const again = await this.read(id);
      if (again.ok) return this.applyTo(again.stored, event, args, { ...options, retried: true });
    }
    if (!result.ok) {
      return result.reason === 'missing'
        ? refused('not_found', `${id}: not found (it was removed meanwhile)`, undefined, id)
        : refused('changed', `${id} was changed by someone else meanwhile; nothing was written — look at it again and retry`, undefined, id);
    }
    return { kind: 'committed', id, event, from: decision.from, to: decision.to, proposal: decision.proposal };
  }

  /**
   * After a crash between a commit's steps, the next command on the proposal finishes them: the
   * audit log's last row for it must show its current status, and the ledger rows of the
   * transition that brought it there must exist. Done under the proposal's commit lock (which a
   * commit holds across its file and its rows), so a live commit is never "repaired" twice.
   */
  async repair(stored: Stored, entering: Transition | undefined, rows: readonly LedgerRow[], options: { stage: string; actor: Actor }): Promise<void> {
    const { id } = stored;
    await this.store.locked(id, async () => {
      const read = await this.store.read(id);
      if (read.kind !== 'found') return;
      const status = String(read.stored.proposal['status']);
      const last = await this.store.lastAudit(id);
      if (!last || last.to !== status) {
        const from = last?.to ?? null;
        const event = entering && entering.from === from ? entering.event : this.eventBetween(from, status);
        await this.store.appendAudit({ at: this.now(), id, event, from, to: status, stage: options.stage, actor: options.actor });
      }
      for (const row of rows) {
        if (row.key === undefined) continue;
        if (!(await this.store.ledgerHas(row.ledger, row.key, row.row[row.key]))) await this.store.appendLedger(row.ledger, row.row);
      }
    });
  }

  /** The promote stage's stamp field and the states it promotes, if the pipeline has one. */
  private promotion(): { stamp: string; states: string[] } | undefined {
    const stage = this.pipeline.stages.find((candidate) => candidate.kind === 'promote');
    return stage?.kind === 'promote' ? { stamp: stage.stamp, states: Object.keys(stage.outcomes) } : undefined;
  }

  /**
   * Repair the audit log after a crash between a commit's steps, for every proposal: a status
   * that is not the `to` of its last audit row gets the missing row, and a promotion stamp
   * without its `promote` row gets that row. One pass over the status index and the (cached,
   * incrementally read) last audit rows; each suspect is checked again under its commit lock.
   * Run at the start of a batch. Returns how many rows were added.
   */
  async repairAudit(stage: string, actor: Actor): Promise<number> {
    const last = await this.store.lastAudits();
    const promotion = this.promotion();
    const { byId } = await this.store.statuses();
    let repaired = 0;
    for (const [id, { status, marked }] of byId) {
      if (!this.pipeline.lifecycle.states.includes(status)) continue;
      const known = last.get(id);
      const stampMissingRow = promotion !== undefined && marked.includes(promotion.stamp) && known?.event !== 'promote';
      if (known?.to === status && !stampMissingRow) continue;
      repaired += await this.store.locked(id, async () => {
        const read = await this.store.read(id);
        if (read.kind !== 'found') return 0;
        const now = String(read.stored.proposal['status']);
        const row = await this.store.lastAudit(id);
        const from = row?.to ?? null;
        if (from !== now) {
          await this.store.appendAudit({ at: this.now(), id, event: this.eventBetween(from, now), from, to: now, stage, actor });
          return 1;
        }
        if (promotion && read.stored.proposal[promotion.stamp] !== undefined && row?.event !== 'promote' && promotion.states.includes(now)) {
          await this.store.appendAudit({ at: this.now(), id, event: 'promote', from: now, to: now, stage, actor });
          return 1;
        }
        return 0;
      });
    }
    return repaired;
  }

  /** The event that moves `from` to `to` (create from nothing), for repair rows. */
  private eventBetween(from: string | null, to: string): string {
    if (from === null) return 'create';
    return this.pipeline.lifecycle.transitions.find((t) => t.from === from && t.target === to)?.event ?? 'repair';
  }

  /** The ledger that records declined source keys, if the pipeline has a transform stage. */
  declineLedger(): string | undefined {
    const transform = this.pipeline.stages.find((stage) => stage.kind === 'transform');
    return transform?.kind === 'transform' ? transform.declines.ledger : undefined;
  }

  /** Is a source key handled: proposed, or declined by the transform? */
  async keyHandled(key: string, declined?: ReadonlySet<string>): Promise<{ by: 'proposal'; id: string } | { by: 'ledger' } | undefined> {
    const owner = await this.store.keyOwner(key);
    if (owner !== undefined) return { by: 'proposal', id: owner };
    const keys = declined ?? (await this.declinedKeys());
    return keys.has(key) ? { by: 'ledger' } : undefined;
  }

  async declinedKeys(): Promise<Set<string>> {
    const ledger = this.declineLedger();
    if (!ledger) return new Set();
    const field = this.pipeline.def.proposal.key;
    return new Set((await this.store.readLedger(ledger)).map((row) => row[field]).filter((value): value is string => typeof value === 'string'));
  }

  /**
   * Create a proposal from `{<key>, <payload>}` (shipped: `{artifact_id, candidate}`): the payload
   * must satisfy the proposal schema, and a key already handled is refused.
   */
  async propose(input: unknown, options: { stage: string; actor: Actor; declined?: ReadonlySet<string> }): Promise<Outcome> {
    const { key: keyField, payload: payloadField, schema } = this.pipeline.def.proposal;
    if (!input || typeof input !== 'object' || Array.isArray(input)) return refused('invalid_input', `the input must be a JSON object {${keyField}, ${payloadField}}`);
    const record = input as Record<string, unknown>;
    const extra = Object.keys(record).filter((name) => name !== keyField && name !== payloadField);
    if (extra.length) return refused('invalid_input', `unknown key${extra.length > 1 ? 's' : ''} ${extra.map((name) => `"${name}"`).join(', ')} (expected {${keyField}, ${payloadField}})`);
    const key = record[keyField];
    if (typeof key !== 'string' || key.trim() === '') return refused('invalid_input', `${keyField} must be a non-empty string`);
    if (!(payloadField in record)) return refused('invalid_input', `missing ${payloadField}`);
    const findings = this.pipeline.schemas.check(schema, record[payloadField]);
    if (findings.length) return refused('schema_invalid', `the ${payloadField} fails the ${schema} schema`, formatFindings(findings, payloadField));
    const handled = await this.keyHandled(key, options.declined);
    if (handled) {
      return refused('already_handled', handled.by === 'proposal' ? `${keyField} ${key} is already proposed as ${handled.id}` : `${keyField} ${key} was already declined (see ${this.declineLedger()}.jsonl)`);
    }
    return this.create(key, record[payloadField], options);
  }

  /** Write a new proposal in the initial state (no checks beyond the key's uniqueness). */
  async create(key: string, payload: unknown, options: { stage: string; actor: Actor; id?: string }): Promise<Outcome> {
    const { key: keyField, payload: payloadField } = this.pipeline.def.proposal;
    const id = options.id ?? this.ids();
    const now = this.now();
    const initial = this.pipeline.lifecycle.initial;
    const proposal: Proposal & { id: string } = { id, [keyField]: key, created_at: now, status: initial, [payloadField]: payload };
    const result = await this.store.create(proposal, key, { at: now, id, event: 'create', from: null, to: initial, stage: options.stage, actor: options.actor });
    if (!result.ok) return refused('already_handled', `${keyField} ${key} is already proposed as ${result.existing}`);
    return { kind: 'committed', id, event: 'create', from: null, to: initial, proposal };
  }
}
