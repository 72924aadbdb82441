/**
 * `anthropic` provider: the Anthropic Messages API (`{base_url}/v1/messages`). The key is read
 * from the environment variable `api_key_env` names (default ANTHROPIC_API_KEY), never from YAML.
 */
import type { ModelSettings } from './index.js';
import { callJsonApi, resolveApiKey, tokenCount, type ParseAnswer } from './http.js';
import type { RetryPolicy } from './retry.js';
import type { Provider } from './types.js';

export interface AnthropicDef {
  base_url?: string;
  model?: string;
  api_key_env?: string;
  temperature?: number;
  max_tokens?: number;
  paid?: boolean;
}

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_VERSION = '2023-06-01';
const DEFAULT_MAX_TOKENS = 1024;

/** The text blocks of `content`, concatenated; usage from input_tokens/output_tokens (null when absent). */
export const parseMessage: ParseAnswer = (json) => {
  if (!json || typeof json !== 'object') return undefined;
  const body = json as { content?: unknown; usage?: { input_tokens?: unknown; output_tokens?: unknown } };
  if (!Array.isArray(body.content)) return undefined;
  const blocks = body.content as Array<{ type?: unknown; text?: unknown } | null>;
  const text = blocks
    .filter((block) => block?.type === 'text' && typeof block.text === 'string')
    .map((block) => block!.text as string)
    .join('');
  return { text, usage: { tokens_in: tokenCount(body.usage?.input_tokens), tokens_out: tokenCount(body.usage?.output_tokens) } };
};

/**
 * A provider that sends the rendered prompt as one user message. `retry` tunes the backoff
 * (tests use short waits); the attempts and the Retry-After cap come from `settings`.
 */
export function createAnthropicProvider(name: string, def: Record<string, unknown>, settings: ModelSettings, retry: Partial<RetryPolicy> = {}): Provider {
  const d = def as AnthropicDef;
  const label = `anthropic provider "${name}"`;
  const url = `${(d.base_url ?? ANTHROPIC_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
  const keyVariable = d.api_key_env ?? 'ANTHROPIC_API_KEY';
  return {
    name,
    kind: 'anthropic',
    paid: d.paid !== false,
    model: d.model,
    deterministic: false,
    async call(request) {
      const key = resolveApiKey(settings, keyVariable);
      if (!key) return { ok: false, outage: `${label}: environment variable ${keyVariable} is not set` };
      const headers = { 'x-api-key': key, 'anthropic-version': ANTHROPIC_VERSION, 'content-type': 'application/json' };
      const body: Record<string, unknown> = { model: d.model, max_tokens: d.max_tokens ?? DEFAULT_MAX_TOKENS, messages: [{ role: 'user', content: request.prompt }] };
      if (d.temperature !== undefined) body['temperature'] = d.temperature;
      return callJsonApi(label, { url, headers, body }, settings, parseMessage, request.signal, retry);
    },
  };
}
