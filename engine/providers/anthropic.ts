/**
 * `anthropic` provider: the Anthropic Messages API (`{base_url}/v1/messages`). The key is read
 * from the environment variable `api_key_env` names (default ANTHROPIC_API_KEY), never from YAML.
 */
import type { AnthropicProviderConfig } from '../config/types.js';
import type { ModelSettings } from './index.js';
import { tokenCount } from '../jury/verdict.js';
import { callJsonApi, resolveApiKey, splitUserInfo, type ParseAnswer } from './http.js';
import type { RetryPolicy } from './retry.js';
import type { Provider } from './types.js';

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
export function createAnthropicProvider(name: string, def: AnthropicProviderConfig, settings: ModelSettings, retry: Partial<RetryPolicy> = {}): Provider {
  const label = `anthropic provider "${name}"`;
  const url = `${(def.base_url ?? ANTHROPIC_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
  const keyVariable = def.api_key_env ?? 'ANTHROPIC_API_KEY';
  return {
    name,
    kind: 'anthropic',
    paid: def.paid !== false,
    model: def.model,
    source: splitUserInfo(url).url,
    deterministic: false,
    async call(request) {
      const key = resolveApiKey(settings, keyVariable);
      if (!key) return { ok: false, outage: `${label}: environment variable ${keyVariable} is not set` };
      const headers = { 'x-api-key': key, 'anthropic-version': ANTHROPIC_VERSION, 'content-type': 'application/json' };
      const body: Record<string, unknown> = {
        model: def.model,
        max_tokens: def.max_tokens ?? DEFAULT_MAX_TOKENS,
        messages: [{ role: 'user', content: request.prompt }],
      };
      if (def.temperature !== undefined) body['temperature'] = def.temperature;
      return callJsonApi(label, { url, headers, body }, settings, parseMessage, request.signal, retry);
    },
  };
}
