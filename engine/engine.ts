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
import { hasPath } from './util/json-path.js';
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
    // A person's command first finishes a commit a crash interrupted (its missing audit row).
    if (options.actor === 'cli' && (await this.store.lastAudits()).get(id)?.to !== decision.from) await this.repairOne(id, options);
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
    return { kind: 'committed', id, event, from: decision.from, to: decision.to, proposal: decision.proposal, version: result.version };
  }

  /**
   * After a crash between a commit's steps, the next command on the proposal finishes them: the
   * audit log's last row for it must show its current status (and a promotion stamp its
   * `promote` row), and the ledger rows of the transition that brought it there must exist.
   */
  async repair(stored: Stored, entering: Transition | undefined, rows: readonly LedgerRow[], options: { stage: string; actor: Actor }): Promise<void> {
    await this.repairOne(stored.id, { ...options, ...(entering ? { entering } : {}), rows });
  }

  /** The promote stage's stamp field and the states it promotes, if the pipeline has one. */
  private promotion(): { stamp: string; states: string[] } | undefined {
    const stage = this.pipeline.stages.find((candidate) => candidate.kind === 'promote');
    return stage?.kind === 'promote' ? { stamp: stage.stamp, states: Object.keys(stage.outcomes) } : undefined;
  }

  /**
   * Repair one proposal's audit (and ledger) rows. Under its commit lock, which a commit holds
   * across its file and its rows, so a commit still in progress is never "repaired" twice.
   * Returns the rows added, or -1 for a proposal with no audit history that is not in the
   * initial state (a file put there by hand: there is nothing true to write for it).
   */
  private async repairOne(id: string, options: { stage: string; actor: Actor; entering?: Transition; rows?: readonly LedgerRow[] }): Promise<number> {
    return this.store.locked(id, async () => {
      const read = await this.store.read(id);
      if (read.kind !== 'found') return 0;
      const status = String(read.stored.proposal['status']);
      if (!this.pipeline.lifecycle.states.includes(status)) return 0;
      const last = await this.store.lastAudit(id);
      const from = last?.to ?? null;
      const at = this.now();
      let added = 0;
      if (from !== status) {
        if (from === null && status !== this.pipeline.lifecycle.initial) return -1;
        const event = options.entering && options.entering.from === from ? options.entering.event : this.eventBetween(from, status);
        await this.store.appendAudit({ at, id, event, from, to: status, stage: options.stage, actor: options.actor });
        added++;
      } else {
        const promotion = this.promotion();
        if (promotion && hasPath(read.stored.proposal, promotion.stamp) && promotion.states.includes(status) && last?.event !== 'promote') {
          await this.store.appendAudit({ at, id, event: 'promote', from: status, to: status, stage: options.stage, actor: options.actor });
          added++;
        }
      }
      for (const row of options.rows ?? []) {
        if (row.key === undefined) continue;
        if (!(await this.store.ledgerHas(row.ledger, row.key, row.row[row.key]))) {
          await this.store.appendLedger(row.ledger, row.row);
          added++;
        }
      }
      return added;
    });
  }

  /**
   * Repair the audit log after a crash between a commit's steps, for every proposal: a status
   * that is not the `to` of its last audit row gets the missing row, and a promotion stamp
   * without its `promote` row gets that row. One pass over the status index and the (cached,
   * incrementally read) last audit rows; each suspect is checked again under its commit lock.
   * Run at the start of a batch. Returns the rows added and the proposals with no history.
   */
  async repairAudit(stage: string, actor: Actor, statuses?: Awaited<ReturnType<Store['statuses']>>): Promise<{ added: number; unexplained: string[] }> {
    const last = await this.store.lastAudits({ save: true });
    const promotion = this.promotion();
    // A run that has just scanned the store passes its scan: no second pass over every file.
    const { byId } = statuses ?? (await this.store.statuses());
    let added = 0;
    const unexplained: string[] = [];
    for (const [id, { status, marked }] of byId) {
      if (!this.pipeline.lifecycle.states.includes(status)) continue;
      const known = last.get(id);
      const stampMissingRow = promotion !== undefined && marked.includes(promotion.stamp) && known?.event !== 'promote';
      if (known?.to === status && !stampMissingRow) continue;
      if (known === undefined && status !== this.pipeline.lifecycle.initial) {
        unexplained.push(id); // only a create has no history before it, and creates are initial
        continue;
      }
      const result = await this.repairOne(id, { stage, actor });
      if (result < 0) unexplained.push(id);
      else added += result;
    }
    return { added, unexplained };
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
  async keyHandled(key: string): Promise<{ by: 'proposal'; id: string } | { by: 'ledger' } | undefined> {
    const owner = await this.store.keyOwner(key);
    if (owner !== undefined) return { by: 'proposal', id: owner };
    const ledger = this.declineLedger();
    // Asked of the ledger each time (it reads only what was appended since): another run may
    // have just declined the record.
    return ledger !== undefined && (await this.store.ledgerHas(ledger, this.pipeline.def.proposal.key, key)) ? { by: 'ledger' } : undefined;
  }


  /**
   * Create a proposal from `{<key>, <payload>}` (shipped: `{artifact_id, candidate}`): the payload
   * must satisfy the proposal schema, and a key already handled is refused.
   */
  async propose(input: unknown, options: { stage: string; actor: Actor }): Promise<Outcome> {
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
    const handled = await this.keyHandled(key);
    if (handled) {
      return refused('already_handled', handled.by === 'proposal' ? `${keyField} ${key} is already proposed as ${handled.id}` : `${keyField} ${key} was already declined (see ${this.pipeline.ledgers[this.declineLedger()!] ?? this.declineLedger()})`);
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
    return { kind: 'committed', id, event: 'create', from: null, to: initial, proposal, version: result.version };
  }
}
