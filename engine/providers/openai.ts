/**
 * `openai` provider: OpenAI-compatible chat completions (`{base_url}/chat/completions`), which
 * also covers local servers (Ollama, vLLM, LM Studio). Without `api_key_env` no Authorization
 * header is sent, because local servers need none.
 */
import type { OpenAIProviderConfig } from '../config/types.js';
import type { ModelSettings } from './index.js';
import { tokenCount } from '../jury/verdict.js';
import { callJsonApi, resolveApiKey, splitUserInfo, type ParseAnswer } from './http.js';
import type { RetryPolicy } from './retry.js';
import type { Provider } from './types.js';

/** choices[0].message.content as text, usage from prompt_tokens/completion_tokens (null when absent). */
export const parseChatCompletion: ParseAnswer = (json) => {
  if (!json || typeof json !== 'object') return undefined;
  const body = json as { choices?: unknown; usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } };
  if (!Array.isArray(body.choices)) return undefined;
  const first = body.choices[0] as { message?: { content?: unknown } } | undefined;
  const content = first?.message?.content;
  if (typeof content !== 'string') return undefined;
  return { text: content, usage: { tokens_in: tokenCount(body.usage?.prompt_tokens), tokens_out: tokenCount(body.usage?.completion_tokens) } };
};

/**
 * A provider that sends the rendered prompt as one user message. `retry` tunes the backoff
 * (tests use short waits); the attempts and the Retry-After cap come from `settings`.
 */
export function createOpenAIProvider(name: string, def: OpenAIProviderConfig, settings: ModelSettings, retry: Partial<RetryPolicy> = {}): Provider {
  const label = `openai provider "${name}"`;
  const url = `${def.base_url.replace(/\/+$/, '')}/chat/completions`;
  return {
    name,
    kind: 'openai',
    paid: def.paid !== false,
    model: def.model,
    source: splitUserInfo(url).url,
    deterministic: false,
    async call(request) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (def.api_key_env) {
        const key = resolveApiKey(settings, def.api_key_env);
        if (!key) return { ok: false, outage: `${label}: environment variable ${def.api_key_env} is not set` };
        headers['authorization'] = `Bearer ${key}`;
      }
      const body: Record<string, unknown> = { model: def.model, messages: [{ role: 'user', content: request.prompt }] };
      if (def.temperature !== undefined) body['temperature'] = def.temperature;
      if (def.max_tokens !== undefined) body['max_tokens'] = def.max_tokens;
      if (def.json_mode) body['response_format'] = { type: 'json_object' };
      return callJsonApi(label, { url, headers, body }, settings, parseChatCompletion, request.signal, retry);
    },
  };
}
