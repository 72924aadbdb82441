/**
 * The transform stage (SPEC §5.5): source records → pending proposals. A record already handled
 * (its key in proposals/ or the declines ledger) never reaches a provider; the pre-gate skips the
 * rest silently; the transformer's answer is parsed leniently, provenance is stitched over it and
 * it is validated strictly. An outage leaves the record untouched, to be retried next run: there
 * is no watermark, so nothing is ever marked done that was not finished.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { formatFindings } from '../config/findings.js';
import type { TransformStageDef } from '../config/types.js';
import type { Actor, Engine } from '../engine.js';
import { evaluate } from '../expr/evaluate.js';
import { renderPrompt } from '../expr/template.js';
import type { Usage } from '../jury/verdict.js';
import { callProvider, type Called } from '../providers/call.js';
import type { ProviderSource } from '../providers/index.js';
import { getPath, isObject, setPath } from '../util/json-path.js';

export interface SourceRecord {
  file: string;
  key: string;
  record: Record<string, unknown>;
  /** The id it gets if proposed, allocated in source order so proposals sort like their records. */
  id?: string;
}

/** Read the source directory: records sorted by the declared fields, then key; bad files reported. */
export function readSources(dir: string, stage: TransformStageDef): { records: SourceRecord[]; problems: string[] } {
  const problems: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json')).sort();
  } catch (error) {
    return { records: [], problems: [`cannot read the source directory ${dir}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist' : (error as Error).message}`] };
  }
  const records: SourceRecord[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    let record: unknown;
    try {
      record = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      problems.push(`${name}: not valid JSON (${(error as Error).message}) — skipped`);
      continue;
    }
    if (!isObject(record)) {
      problems.push(`${name}: not a JSON object — skipped`);
      continue;
    }
    const key = getPath(record, stage.source.key);
    if (typeof key !== 'string' || key.trim() === '') {
      problems.push(`${name}: has no ${stage.source.key} — skipped`);
      continue;
    }
    const missing = (stage.source.required ?? []).filter((field) => getPath(record, field) === undefined);
    if (missing.length) {
      problems.push(`${name}: has no ${missing.join(', ')} — skipped`);
      continue;
    }
    records.push({ file, key, record });
  }
  const order = stage.source.order ?? [];
  const sortKey = (entry: SourceRecord) => order.map((field) => String(getPath(entry.record, field) ?? ''));
  records.sort((a, b) => {
    const [ka, kb] = [sortKey(a), sortKey(b)];
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
  return { records, problems };
}

const compiledPregates = new WeakMap<TransformStageDef, RegExp[]>();

/** The declarative pre-gate: a record passes when any pattern matches any of the fields. */
export function pregatePasses(stage: TransformStageDef, record: Record<string, unknown>): boolean {
  if (!stage.pregate) return true;
  let patterns = compiledPregates.get(stage);
  if (!patterns) {
    patterns = stage.pregate.patterns.map((pattern) => new RegExp(pattern));
    compiledPregates.set(stage, patterns);
  }
  return stage.pregate.fields.some((field) => {
    const value = getPath(record, field);
    return typeof value === 'string' && patterns.some((pattern) => pattern.test(value));
  });
}

export type TransformResult = (
  | { kind: 'proposed'; id: string }
  | { kind: 'declined'; reason: string; detail: string | null }
  | { kind: 'untouched'; reason: string }
  | { kind: 'skipped'; reason: 'handled' | 'pregate' | 'claimed' }
) & { /** Tokens spent on this record in this run (not for cached answers). */ spent?: Usage };

export interface TransformOptions {
  providers: ProviderSource;
  useCache: boolean;
  actor: Actor;
  signal?: AbortSignal;
}

/** Transform one record: propose it, decline it, or leave it untouched. */
export async function transformOne(engine: Engine, stage: TransformStageDef, source: SourceRecord, options: TransformOptions): Promise<TransformResult> {
  const { key, record } = source;
  if (await engine.keyHandled(key)) return { kind: 'skipped', reason: 'handled' };
  if (!pregatePasses(stage, record)) return { kind: 'skipped', reason: 'pregate' };
  const provider = options.providers.get(stage.provider);
  const called = await callProvider(engine.store, provider, {
    purpose: 'transform',
    prompt: renderPrompt(stage.prompt ?? '', { record }),
    input: { record },
    env: { PIPELINE_STAGE: stage.name },
    ...(options.signal ? { signal: options.signal } : {}),
  }, { useCache: options.useCache, maxAnswerBytes: stage.max_answer_bytes });
  if (!called.ok) {
    if (called.kind === 'outage') return { kind: 'untouched', reason: called.reason };
    return decline(engine, stage, key, stage.declines.invalid, called.reason);
  }
  const spent = called.cached || provider.deterministic ? {} : { spent: called.usage };
  return { ...(await judgeAnswer(engine, stage, source, called, options)), ...spent };
}

async function judgeAnswer(engine: Engine, stage: TransformStageDef, source: SourceRecord, called: Extract<Called, { ok: true }>, options: TransformOptions): Promise<TransformResult> {
  const { key, record } = source;
  const answer = called.value;
  if (!isObject(answer)) return decline(engine, stage, key, stage.declines.invalid, 'the answer is not a JSON object');
  if (answer['eligible'] === false) {
    const reason = typeof answer['reason'] === 'string' ? answer['reason'] : '';
    if ((stage.declines.refusals ?? []).includes(reason)) return decline(engine, stage, key, reason, null);
    return decline(engine, stage, key, stage.declines.invalid, `refused${reason ? `: ${reason}` : ' without a reason'}`);
  }
  const { eligible: _eligible, ...candidate } = answer;
  void _eligible;
  const now = engine.now();
  for (const [field, expr] of Object.entries(stage.stitch ?? {})) {
    const { value } = evaluate(expr, { root: record, now });
    if (value !== undefined) setPath(candidate, field, value);
  }
  const schema = engine.pipeline.def.proposal.schema;
  const findings = engine.pipeline.schemas.check(schema, candidate);
  if (findings.length) return decline(engine, stage, key, stage.declines.schema_invalid, formatFindings(findings).slice(0, 5).join('; '));
  const created = await engine.create(key, candidate, { stage: stage.name, actor: options.actor, ...(source.id ? { id: source.id } : {}) });
  if (created.kind !== 'committed') return { kind: 'skipped', reason: 'handled' };
  await called.keep();
  return { kind: 'proposed', id: created.id };
}

async function decline(engine: Engine, stage: TransformStageDef, key: string, reason: string, detail: string | null): Promise<TransformResult> {
  const keyField = engine.pipeline.def.proposal.key;
  await engine.store.appendLedger(stage.declines.ledger, { [keyField]: key, reason, detail, declined_at: engine.now() });
  return { kind: 'declined', reason, detail };
}

/** The source directory: --source, else the stage's (relative to the pipeline directory). */
export function sourceDir(engine: Engine, stage: TransformStageDef, override: string | undefined, cwd: string): string {
  return override ? path.resolve(cwd, override) : path.resolve(engine.pipeline.dir, stage.source.dir);
}
