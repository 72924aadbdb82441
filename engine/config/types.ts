/**
 * The configuration as the engine sees it after loading (SPEC §1–§2). Plain data.
 *
 * The shapes of the files are generated from their schemas (schema-types.generated.ts, by
 * scripts/generate-config-types.js), so they cannot drift from what validation accepts. This
 * module only names parts of them and adds what loading adds: a stage's `name` and `file`, the
 * rubric's default coverage, and the normalised defaults.
 */
import type {
  AnthropicProviderConfig,
  ChecksProviderConfig,
  CommandProviderConfig,
  JudgeStageFile,
  MachineFile,
  MapProviderConfig,
  OpenAIProviderConfig,
  PipelineFile,
  PromoteStageFile,
  ProviderConfig,
  ReviewStageFile,
  RubricFile,
  TransformStageFile,
} from './schema-types.generated.js';

export type {
  Check,
  Duration,
  Operation,
  ReviewCommand as CommandDef,
  StateConfig as StateDef,
  TransitionConfig as TransitionDef,
} from './schema-types.generated.js';

/** pipeline.yaml as written (validated). */
export type PipelineDef = PipelineFile;
/** Where a proposal keeps its key, its payload and its creation stamp. */
export type ProposalShape = PipelineDef['proposal'];
export type SecretDef = NonNullable<PipelineDef['secrets']>[string];

/** A provider, discriminated by `kind`. */
export type ProviderDef = ProviderConfig;
export type ProviderKind = ProviderDef['kind'];
export type { AnthropicProviderConfig, ChecksProviderConfig, CommandProviderConfig, MapProviderConfig, OpenAIProviderConfig };
/** The kinds that call a model: they have timeouts, retries and a concurrency cap. */
export type ModelProviderDef = CommandProviderConfig | OpenAIProviderConfig | AnthropicProviderConfig;

/** A rubric file as written (validated), before its defaults. */
export type { RubricFile };
/** A rubric file with its defaults applied. */
export type Rubric = RubricFile & { min_criterion_coverage: number };
export type Criterion = Rubric['criteria'][number];

export type MachineDef = MachineFile;
export type GuardDef = NonNullable<MachineDef['guards']>[string];

/** What loading adds to every stage file. */
interface Loaded {
  /** The stage's `name:`, else its file name without .yaml. */
  name: string;
  /** The file it came from, relative to the pipeline directory. */
  file: string;
}

export type TransformStageDef = TransformStageFile & Loaded;
export type ReviewStageDef = ReviewStageFile & Loaded;
export type JudgeStageDef = JudgeStageFile & Loaded;
export type PromoteStageDef = PromoteStageFile & Loaded;
export type StageDef = TransformStageDef | ReviewStageDef | JudgeStageDef | PromoteStageDef;

/**
 * How the walk shows a field: a `{{path}}` template over its value, or one template per value of
 * the field `by` names (with a `default`). Unset: the generic rules (lists `a, b`, maps `name value`).
 */
export type WalkFormat = NonNullable<NonNullable<NonNullable<ReviewStageDef['walk']>['show']>[number]['format']>;
export type PromoteOutcome = PromoteStageDef['outcomes'][string];

/** `defaults:` of pipeline.yaml with every default filled in and durations in seconds. */
export interface Defaults {
  concurrency: number;
  /** Seconds. */
  timeout: number;
  attempts: number;
  /** Seconds a claim lasts without renewal. */
  claimTtl: number;
}
