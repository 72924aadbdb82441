/**
 * `map`: a deterministic transformer. Declared refusals come first (a value expression that
 * yields nothing → `{eligible: false, reason}`), then the output mapping over the record.
 * Free and offline.
 */
import type { MapProviderConfig } from '../config/types.js';
import { evaluate } from '../expr/evaluate.js';
import { UNKNOWN_USAGE, type Provider, type ProviderRequest, type ProviderResult } from './types.js';

function empty(value: unknown): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

export function createMapProvider(name: string, def: MapProviderConfig, now: () => string): Provider {
  return {
    name,
    kind: 'map',
    paid: false,
    model: undefined,
    deterministic: true,
    async call(request: ProviderRequest): Promise<ProviderResult> {
      const record = request.input['record'];
      for (const refusal of def.refuse ?? []) {
        if (empty(evaluate(refusal.unless, { root: record, now: now() }).value))
          return { ok: true, value: { eligible: false, reason: refusal.reason }, usage: UNKNOWN_USAGE };
      }
      return { ok: true, value: evaluate(def.output, { root: record, now: now() }).value, usage: UNKNOWN_USAGE };
    },
  };
}
