/**
 * The engine: a loaded pipeline over a store, with the clock and the id generator injected.
 * Every change to a proposal goes through `applyTo` (a machine event) or `create`, so refusals,
 * audit rows and ledger rows behave the same from the CLI, a run or a test. A change is one
 * store commit — proposal, audit rows, ledger rows and entry writes together — so there is never
 * half a change to finish.
 */
import type { Env } from './config/interpolate.js';
import type { Pipeline } from './config/load.js';
import { formatFindings } from './config/findings.js';
import type { Proposal } from './lifecycle/effects.js';
import { decide, type Commit, type Refusal } from './lifecycle/decide.js';
import { refused, type Outcome } from './outcome.js';
import { readSecret, type SecretRead } from './secret-files.js';
import type { AuditRow, Change, Lease, Store, Stored } from './store/types.js';
import { isUlid, quotedNonId, ulidGenerator, type IdGenerator } from './util/ids.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from './util/nesting.js';
import { DEFAULT_MAX_FIELD_BYTES, keyTooLong, overCap, oversizeField } from './util/text-size.js';
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

/** More of the same commit, computed from the change as decided (e.g. the promotion that follows a verdict). */
export type Extend = (change: Change, decision: Commit) => Promise<Change | undefined>;

export interface ApplyOptions {
  stage: string;
  actor: Actor;
  /** Checks run after the proposal is read and before its status is looked at. */
  before?: (stored: Stored) => Refusal | undefined;
  /** The lease a run holds on the proposal: the commit is refused once it is no longer current. */
  lease?: Lease;
  /** Add to the commit before it is made (it lands whole, or not at all). */
  extend?: Extend;
  /**
   * A person's command whose arguments do not depend on what was read (a review command): when it
   * loses a race it is decided once more on the proposal as it is now, so a refusal names the
   * status it met. Never a decision made from what was read — a verdict judged the proposal as it
   * was, and on a proposal changed since it is no verdict (SPEC §5.4: unjudged).
   */
  redecide?: boolean;
  /** Set on that one re-decision. */
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

  private readonly secrets = new Map<string, Promise<SecretRead>>();

  /**
   * A declared secret, read (and created, when declared so) once per engine: a run promotes many
   * proposals with one secret. Its warnings are given to the first reader only.
   */
  async secret(name: string): Promise<SecretRead> {
    const def = this.pipeline.def.secrets?.[name];
    if (!def) return { ok: false, message: `secret ${name} is not declared` };
    let read = this.secrets.get(name);
    const first = !read;
    if (!read) {
      read = readSecret(name, def, this.env);
      this.secrets.set(name, read);
    }
    const result = await read;
    if (!result.ok) this.secrets.delete(name); // a refusal is asked again (the file may be fixed meanwhile)
    return result.ok && !first ? { ...result, warnings: [] } : result;
  }

  /**
   * Read one proposal named by its id or, when no proposal has that id, by the source key it was
   * made from (the pipeline's key field, SPEC §7); an argument that is not a ULID is refused
   * before the store is touched, and an id wins over a key.
   */
  async read(idOrKey: string): Promise<ReadOutcome> {
    if (!isUlid(idOrKey)) return { ok: false, outcome: refused('invalid_id', `invalid id: ${quotedNonId(idOrKey)} is not a ULID`) };
    let id = idOrKey;
    let result = await this.store.read(id);
    if (result.kind === 'missing') {
      const owner = await this.store.keyHandled(idOrKey);
      if (owner?.by === 'proposal') {
        id = owner.id;
        result = await this.store.read(id);
      } else if (owner?.by === 'ledger') {
        const key = this.pipeline.def.proposal.key;
        const message = `${idOrKey}: not found — no proposal has this id, and the ${key} ${idOrKey} was declined, so no proposal was made from it`;
        return { ok: false, outcome: refused('not_found', message, undefined, idOrKey) };
      }
    }
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

  /** The audit row of a transition, with the arguments the transition records. */
  auditRow(
    id: string,
    decision: Pick<Commit, 'event' | 'from' | 'to' | 'transition'>,
    args: Record<string, unknown>,
    options: { stage: string; actor: Actor },
    at: string,
  ): AuditRow {
    const recorded = (decision.transition.recordArgs ?? []).filter((name) => Object.hasOwn(args, name));
    return {
      at,
      id,
      event: decision.event,
      from: decision.from,
      to: decision.to,
      stage: options.stage,
      actor: options.actor,
      ...(recorded.length ? { args: Object.fromEntries(recorded.map((name) => [name, args[name]])) } : {}),
    };
  }

  async applyTo(given: Stored, event: string, args: Record<string, unknown>, options: ApplyOptions): Promise<Outcome> {
    // A commit a crash interrupted is finished first (the next command on a proposal sees it whole).
    let stored = given;
    if ((await this.store.recover()) > 0) {
      const again = await this.read(given.id);
      if (!again.ok) return again.outcome;
      stored = again.stored;
    }
    const { id, proposal } = stored;
    // A file nested past what any proposal holds (hand-made) would overflow the stack of every copy
    // a decision makes: refused by id, never an internal error.
    if (nestsDeeperThan(proposal, MAX_PRINT_DEPTH))
      return refused(
        'schema_invalid',
        `${id} (${String(proposal['status'])}) nests more than ${MAX_PRINT_DEPTH} levels deep; nothing was written`,
        undefined,
        id,
      );
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
    if (decision.kind === 'refused')
      return { kind: 'refused', id, code: decision.code, message: decision.message, ...(decision.details ? { details: decision.details } : {}) };
    if (decision.kind === 'repeat') {
      const status = String(proposal['status']);
      const message = decision.entered ? `${id} is already ${status}; nothing changed` : `${id} stays ${status}; nothing written`;
      return { kind: 'unchanged', id, event, status, proposal, message };
    }
    let change: Change = {
      id,
      version: stored.version,
      next: decision.proposal,
      audit: [this.auditRow(id, decision, args, options, now)],
      ledger: decision.rows.map((row) => ({ ledger: row.ledger, row: row.row })),
      entries: decision.moves.map((move) => ({ op: 'move' as const, from: move.from, to: move.to, id })),
      ...(options.lease ? { lease: options.lease } : {}),
    };
    if (options.extend) change = (await options.extend(change, decision)) ?? change;
    const result = await this.store.commit(change);
    if (!result.ok && result.reason === 'changed' && options.redecide && !options.retried) {
      // A person lost a race: decide again on the proposal as it is now, so a refusal names its status.
      const again = await this.read(id);
      if (again.ok) return this.applyTo(again.stored, event, args, { ...options, retried: true });
    }
    if (!result.ok) {
      switch (result.reason) {
        case 'missing':
          return refused('not_found', `${id}: not found (it was removed meanwhile)`, undefined, id);
        case 'lease':
          return refused('lease', `${id}: this run's lease on it expired and another run may have taken it over; nothing was written`, undefined, id);
        case 'entry':
          return refused(
            'entry',
            `${id} (${String(proposal['status'])}): ${result.detail ?? 'its entry is not where the change expects it'}; nothing was written`,
            undefined,
            id,
          );
        case 'changed':
          return refused('changed', `${id} was changed by someone else meanwhile; nothing was written — look at it again and retry`, undefined, id);
      }
    }
    return {
      kind: 'committed',
      id,
      event,
      from: decision.from,
      to: change.next['status'] as string,
      proposal: change.next,
      version: result.version,
      audit: change.audit,
    };
  }

  /** Is a source key handled: proposed, or declined by the transform? */
  keyHandled(key: string): ReturnType<Store['keyHandled']> {
    return this.store.keyHandled(key);
  }

  /**
   * The cap on one text field of what a person or a file gives the engine (`propose`, a review
   * command's arguments): the transform's (`max_field_bytes`, the largest any transform stage
   * declares), else the shipped 64 KiB — a proposal is held to it however it arrives.
   */
  get maxFieldBytes(): number {
    this.fieldCap ??=
      Math.max(0, ...this.pipeline.stages.map((stage) => (stage.kind === 'transform' ? (stage.max_field_bytes ?? DEFAULT_MAX_FIELD_BYTES) : 0))) ||
      DEFAULT_MAX_FIELD_BYTES;
    return this.fieldCap;
  }
  private fieldCap: number | undefined;

  /**
   * Create a proposal from `{<key>, <payload>}` (the pipeline's declared fields): the payload must
   * satisfy the proposal schema, and a key already handled is refused.
   */
  async propose(input: unknown, options: { stage: string; actor: Actor }): Promise<Outcome> {
    const { key: keyField, payload: payloadField, schema } = this.pipeline.def.proposal;
    if (!input || typeof input !== 'object' || Array.isArray(input))
      return refused('invalid_input', `the input must be a JSON object {${keyField}, ${payloadField}}`);
    const record = input as Record<string, unknown>;
    const extra = Object.keys(record).filter((name) => name !== keyField && name !== payloadField);
    if (extra.length)
      return refused(
        'invalid_input',
        `unknown key${extra.length > 1 ? 's' : ''} ${extra.map((name) => `"${name}"`).join(', ')} (expected {${keyField}, ${payloadField}})`,
      );
    const key = record[keyField];
    if (typeof key !== 'string' || key.trim() === '') return refused('invalid_input', `${keyField} must be a non-empty string`);
    const long = keyTooLong(key);
    if (long) return refused('invalid_input', `${keyField} ${long}`);
    if (!(payloadField in record)) return refused('invalid_input', `missing ${payloadField}`);
    const over = oversizeField(record, this.maxFieldBytes);
    if (over) return refused('invalid_input', `${overCap(over.path, over.bytes, this.maxFieldBytes)} (max_field_bytes)`);
    const findings = this.pipeline.schemas.check(schema, record[payloadField]);
    if (findings.length) return refused('schema_invalid', `the ${payloadField} fails the ${schema} schema`, formatFindings(findings, payloadField));
    const handled = await this.keyHandled(key);
    if (handled) {
      return refused(
        'already_handled',
        handled.by === 'proposal' ? `${keyField} ${key} is already proposed as ${handled.id}` : `${keyField} ${key} was already declined`,
      );
    }
    return this.create(key, record[payloadField], options);
  }

  /** Write a new proposal in the initial state (no checks beyond the key's uniqueness). */
  async create(key: string, payload: unknown, options: { stage: string; actor: Actor; id?: string }): Promise<Outcome> {
    const { key: keyField, payload: payloadField, created: stamp } = this.pipeline.def.proposal;
    const id = options.id ?? this.ids();
    const now = this.now();
    const initial = this.pipeline.lifecycle.initial;
    const proposal: Proposal & { id: string } = { id, [keyField]: key, [stamp]: now, status: initial, [payloadField]: payload };
    const audit: AuditRow = { at: now, id, event: 'create', from: null, to: initial, stage: options.stage, actor: options.actor };
    const result = await this.store.create({ proposal, key, audit });
    if (!result.ok) return refused('already_handled', `${keyField} ${key} is already proposed as ${result.existing}`);
    return { kind: 'committed', id, event: 'create', from: null, to: initial, proposal, version: result.version, audit: [audit] };
  }
}
