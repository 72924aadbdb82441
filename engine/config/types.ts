/** The configuration as the engine sees it after loading (SPEC §1–§2). Plain data. */
import type { PoolDef } from '../pool/config.js';
import type { JsonObject } from '../util/json-path.js';

export interface ProposalShape {
  /** Field holding the source record's id (shipped: artifact_id). */
  key: string;
  /** Field holding the candidate (shipped: candidate). */
  payload: string;
  /** Schema name the payload must satisfy at creation. */
  schema: string;
  /** Field stamped with the creation time (default created_at). */
  created?: string;
}

export interface Criterion {
  name: string;
  weight: number;
  min_pass?: number;
}

export interface Rubric {
  id: string;
  criteria: Criterion[];
  score_threshold: number;
  judge_types: string[];
  gate_policy: 'majority' | 'unanimous';
  min_criterion_coverage: number;
}

export interface GuardDef {
  message: string;
  schema: JsonObject | boolean;
  description?: string;
}

export type Operation =
  | { set: string; to: unknown; when?: string }
  | { remove: string; when?: string }
  | { increment: string; by?: number; when?: string }
  | { move: string; to: string; when?: string }
  | { snapshot: string; into: string; when?: string }
  | { restore: string; from: string; when?: string }
  | { append: string; row: JsonObject; key?: string; when?: string };

export interface TransitionDef {
  target?: string;
  description?: string;
  guard?: string | string[];
  actions?: string | string[];
  ensures?: string;
  idempotent?: true | { same?: string[] };
  message?: string;
  /** Event arguments recorded in the transition's audit row (`args`). */
  record_args?: string[];
}

export interface StateDef {
  description?: string;
  tags?: string[];
  type?: 'atomic' | 'final';
  on?: Record<string, string | TransitionDef | TransitionDef[]>;
}

export interface MachineDef {
  id: string;
  description?: string;
  initial: string;
  states: Record<string, StateDef>;
  guards?: Record<string, GuardDef>;
  effects?: Record<string, Operation[]>;
}

export interface CommandDef {
  event: string;
  description?: string;
  positional?: string;
  args?: Record<string, JsonObject>;
  required?: string[];
  preconditions?: string[];
}

interface StageBase {
  name: string;
  description?: string;
  /** The file it came from, relative to the pipeline directory. */
  file: string;
}

export interface TransformStageDef extends StageBase {
  kind: 'transform';
  source: { dir: string; key: string; order?: string[]; required?: string[] };
  pregate?: { description?: string; fields: string[]; patterns: string[] };
  provider: string;
  prompt?: string;
  stitch?: Record<string, unknown>;
  declines: { ledger: string; refusals?: string[]; invalid: string; schema_invalid: string };
  max_answer_bytes?: number;
  /** UTF-8 bytes per text field of a record or a candidate (default 64 KiB); larger is declined. */
  max_field_bytes?: number;
  /** Bytes per source record file (default 1 MiB); larger is reported and skipped. */
  max_record_bytes?: number;
}

/**
 * How the walk shows a field: a `{{path}}` template over its value, or one template per value of
 * the field `by` names (with a `default`). Unset: the generic rules (lists `a, b`, maps `name value`).
 */
export type WalkFormat = string | { by: string; cases: Record<string, string>; default?: string };

export interface ReviewStageDef extends StageBase {
  kind: 'review';
  title?: string;
  from?: string;
  commands: Record<string, CommandDef>;
  walk?: {
    show?: { label: string; field: string; format?: WalkFormat }[];
    choices?: { key: string; label?: string; command: string; ask?: string[] }[];
  };
}

export interface JudgeStageDef extends StageBase {
  kind: 'judge';
  from: string;
  revalidate?: string;
  rubric: { by: string; map: Record<string, string | { none: string }> };
  judges: Record<string, string>;
  prompts?: Record<string, string>;
  questions?: Record<string, string>;
  events: { pass: string; fail: string };
  /** The proposal field (and event argument) holding the verdict; default verdict. */
  verdict?: string;
  then?: string;
  max_answer_bytes?: number;
}

export interface PromoteOutcome {
  write?: string;
  entry?: JsonObject;
  append?: string;
  row?: JsonObject;
  key?: string;
}

export interface PromoteStageDef extends StageBase {
  kind: 'promote';
  stamp: string;
  outcomes: Record<string, PromoteOutcome>;
}

export type StageDef = TransformStageDef | ReviewStageDef | JudgeStageDef | PromoteStageDef;

export interface ProviderDef {
  kind: 'checks' | 'map' | 'command' | 'openai' | 'anthropic';
  [setting: string]: unknown;
}

export interface SecretDef {
  file: string;
  generate?: 'hex64';
}

export interface Defaults {
  concurrency: number;
  /** Seconds. */
  timeout: number;
  attempts: number;
  /** Seconds a claim lasts without renewal. */
  claimTtl: number;
}

export interface PipelineDef {
  name: string;
  description?: string;
  store?: string;
  machine: string;
  proposal: ProposalShape;
  schemas?: Record<string, string>;
  stages: string[];
  rubrics?: string[];
  ledgers?: Record<string, string>;
  secrets?: Record<string, SecretDef>;
  providers?: Record<string, ProviderDef>;
  defaults?: Partial<{ concurrency: number; timeout: number | string; attempts: number; claim_ttl: number | string }>;
  /** The pool in use (SPEC §5.8). */
  pool?: PoolDef;
}
