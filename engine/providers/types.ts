/**
 * Providers: what the transform and judge stages call. One interface for the deterministic kinds
 * (`checks`, `map`) and the model kinds (`command`, `openai`, `anthropic`). A provider never
 * decides what an answer means: it returns text (or, for deterministic kinds, a value) plus token
 * usage, or an outage. An outage is never a verdict.
 */
import type { Usage } from '../jury/verdict.js';

import type { ProviderKind } from '../config/types.js';

export type { ProviderKind };

export interface ProviderRequest {
  purpose: 'judge' | 'transform';
  /** The rendered prompt template (model kinds send it; deterministic kinds ignore it). */
  prompt: string;
  /** Structured input for deterministic kinds: { proposal, rubric, judge_type } or { record }. */
  input: Record<string, unknown>;
  /** PIPELINE_STAGE, PIPELINE_JUDGE_TYPE, PIPELINE_PROPOSAL_ID for `command`. */
  env: Record<string, string>;
  signal?: AbortSignal;
}

export type ProviderResult =
  | { ok: true; text?: string; value?: unknown; usage: Usage }
  /**
   * Not an answer: unreachable, timed out, non-zero exit, HTTP error, retries exhausted; or an
   * answer over the size cap (`oversize`: a judge leaves the proposal unjudged, a transform
   * declines the record as invalid).
   */
  | { ok: false; outage: string; oversize?: boolean };

export interface Provider {
  readonly name: string;
  readonly kind: ProviderKind;
  /** Costs money per call (asks before a batch). checks and map never do. */
  readonly paid: boolean;
  /** Part of the cache key; deterministic kinds are never cached. */
  readonly model: string | undefined;
  /**
   * Where the answers come from beyond the model, also part of the cache key: a command's words,
   * an HTTP provider's URL (without user-info). Another program or server under the same
   * provider name is another source of answers, never served the old one's.
   */
  readonly source?: string;
  /**
   * The request's `env` reaches what answers (a program's environment: which proposal, which
   * seat), so it is part of what an answer answers, and of its cache key: a program that looks the
   * proposal up by its id answers each proposal apart, whatever the prompt.
   */
  readonly readsEnv?: boolean;
  readonly deterministic: boolean;
  call(request: ProviderRequest): Promise<ProviderResult>;
}

export const UNKNOWN_USAGE: Usage = { tokens_in: null, tokens_out: null };

/** Answers larger than this are unusable (SPEC §6). */
export const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;
