/**
 * Build the providers a pipeline names. Each gets its own concurrency cap (default: at least the
 * stage's concurrency), so one slow or rate-limited provider does not starve the others.
 */
import pLimit from 'p-limit';
import type { Pipeline } from '../config/load.js';
import { parseDuration } from '../util/time.js';
import type { Env } from '../config/interpolate.js';
import type { ModelProviderDef, ProviderDef } from '../config/types.js';
import { createAnthropicProvider } from './anthropic.js';
import { createChecksProvider } from './checks.js';
import { createCommandProvider } from './command.js';
import { createMapProvider } from './map.js';
import { createOpenAIProvider } from './openai.js';
import { DEFAULT_MAX_ANSWER_BYTES, type Provider } from './types.js';

export interface ModelSettings {
  timeoutMs: number;
  attempts: number;
  retryAfterCapMs: number;
  maxAnswerBytes: number;
  env: Env;
}

export interface ProviderOptions {
  env: Env;
  now: () => string;
  /** The stage's concurrency: the default cap of each provider. */
  concurrency: number;
}

/** A model provider's timeout, retries and answer cap, its own settings over the pipeline's defaults. */
export function modelSettings(pipeline: Pipeline, def: ModelProviderDef, env: Env): ModelSettings {
  return {
    timeoutMs: parseDuration(def.timeout, pipeline.defaults.timeout) * 1000,
    attempts: def.attempts ?? pipeline.defaults.attempts,
    retryAfterCapMs: parseDuration(def.retry_after_cap, 60) * 1000,
    maxAnswerBytes: def.max_answer_bytes ?? DEFAULT_MAX_ANSWER_BYTES,
    env,
  };
}

/** Where stages get providers from (tests pass fakes). */
export interface ProviderSource {
  get(name: string): Provider;
}

export class Providers implements ProviderSource {
  private readonly built = new Map<string, Provider>();
  constructor(
    private readonly pipeline: Pipeline,
    private readonly options: ProviderOptions,
  ) {}

  get(name: string): Provider {
    const existing = this.built.get(name);
    if (existing) return existing;
    const def = this.pipeline.def.providers?.[name];
    if (!def) throw new Error(`unknown provider "${name}"`);
    const provider = this.create(name, def);
    const cap = pLimit(('concurrency' in def ? def.concurrency : undefined) ?? Math.max(this.options.concurrency, 1));
    const limited: Provider = { ...provider, call: (request) => cap(() => provider.call(request)) };
    this.built.set(name, limited);
    return limited;
  }

  private create(name: string, def: ProviderDef): Provider {
    switch (def.kind) {
      case 'checks':
        return createChecksProvider(name, def, this.pipeline.schemas);
      case 'map':
        return createMapProvider(name, def, this.options.now);
      case 'command':
        return createCommandProvider(name, def, modelSettings(this.pipeline, def, this.options.env));
      case 'openai':
        return createOpenAIProvider(name, def, modelSettings(this.pipeline, def, this.options.env));
      case 'anthropic':
        return createAnthropicProvider(name, def, modelSettings(this.pipeline, def, this.options.env));
    }
  }
}
