/**
 * The transform stage (SPEC §5.5): source records → pending proposals. A record already handled
 * (its key in proposals/ or the declines ledger) never reaches a provider; the pre-gate skips the
 * rest silently; the transformer's answer is parsed leniently, provenance is stitched over it and
 * it is validated strictly. An outage leaves the record untouched, to be retried next run: there
 * is no watermark, so nothing is ever marked done that was not finished.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync, type Stats } from 'node:fs';
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
import { fileKind } from '../util/file-kind.js';
import { DEFAULT_MAX_FIELD_BYTES, keyTooLong, overCap, oversizeField } from '../util/text-size.js';
import { MAX_PRINT_DEPTH, nestsDeeperThan } from '../util/nesting.js';

export interface SourceRecord {
  file: string;
  key: string;
  record: Record<string, unknown>;
  /** The id it gets if proposed, allocated in source order so proposals sort like their records. */
  id?: string;
}

/** Shipped caps (SPEC §6): a whole source record file (a text field's: util/text-size.ts). */
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

type RecordText = { ok: true; text: string } | { ok: false; problem: string };

/**
 * Read one source record file without ever blocking or reading more than `maxBytes`: only a
 * regular file (a symbolic link only when it resolves to a regular file inside the source
 * directory), opened with O_NONBLOCK and O_NOFOLLOW and checked again on the open descriptor.
 */
function readRecordText(dir: string, name: string, maxBytes: number): RecordText {
  const file = path.join(dir, name);
  let target = file;
  let stats = lstatSync(file);
  if (stats.isSymbolicLink()) {
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      return { ok: false, problem: 'is a symbolic link to nothing' };
    }
    const root = realpathSync(dir);
    if (!real.startsWith(root + path.sep)) return { ok: false, problem: 'is a symbolic link to a file outside the source directory' };
    target = real;
    stats = lstatSync(real);
  }
  if (!stats.isFile()) return { ok: false, problem: `is ${fileKind(stats)}, not a regular file` };
  if (stats.size > maxBytes) return { ok: false, problem: `is ${stats.size} bytes, over the ${maxBytes}-byte record cap (max_record_bytes)` };
  const fd = openSync(target, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  try {
    // Swapped for something else since the lstat: judged by what was opened.
    const opened = fstatSync(fd);
    if (!opened.isFile()) return { ok: false, problem: `is ${fileKind(opened)}, not a regular file` };
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      length += read;
      if (length > maxBytes) return { ok: false, problem: `is over the ${maxBytes}-byte record cap (max_record_bytes)` };
      chunks.push(chunk.subarray(0, read));
    }
    return { ok: true, text: Buffer.concat(chunks, length).toString('utf8') };
  } finally {
    closeSync(fd);
  }
}

/** Why a text is not a JSON value, without quoting any of it (a record may be anything). */
function jsonProblem(text: string, error: unknown): string {
  if (text.trim() === '') return 'not valid JSON (the file is empty)';
  const position = /position (\d+)/.exec((error as Error).message)?.[1];
  return `not valid JSON${position !== undefined ? ` (at character ${position})` : ''}`;
}

/**
 * Read the source directory: records sorted by the declared fields, then key; every entry that is
 * not a record — not a regular file, over the record cap, not a JSON object, nested too deep,
 * missing its key or a required field — is reported in one line naming it (never quoting its
 * content) and skipped.
 * `unreadable` says why the directory itself cannot be read (a run then refuses: exit 1).
 */
export function readSources(dir: string, stage: TransformStageDef): { records: SourceRecord[]; problems: string[]; unreadable?: string } {
  const problems: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((name) => name.endsWith('.json'))
      .sort();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'it does not exist' : code === 'ENOTDIR' ? 'it is not a directory' : (error as Error).message;
    return { records: [], problems: [], unreadable: `cannot read the source directory ${dir}: ${why}` };
  }
  const maxRecordBytes = stage.max_record_bytes ?? DEFAULT_MAX_RECORD_BYTES;
  const records: SourceRecord[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    let read: RecordText;
    try {
      read = readRecordText(dir, name, maxRecordBytes);
    } catch (error) {
      read = { ok: false, problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    if (!read.ok) {
      problems.push(`${name}: ${read.problem} — skipped`);
      continue;
    }
    let record: unknown;
    try {
      record = JSON.parse(read.text);
    } catch (error) {
      problems.push(`${name}: ${jsonProblem(read.text, error)} — skipped`);
      continue;
    }
    if (!isObject(record)) {
      problems.push(`${name}: not a JSON object — skipped`);
      continue;
    }
    // Everything after this (the cap scan, the prompt, the provider input, the cache key) walks the record.
    if (nestsDeeperThan(record, MAX_PRINT_DEPTH)) {
      problems.push(`${name}: nests more than ${MAX_PRINT_DEPTH} levels deep — skipped`);
      continue;
    }
    const key = getPath(record, stage.source.key);
    if (typeof key !== 'string' || key.trim() === '') {
      problems.push(`${name}: has no ${stage.source.key} — skipped`);
      continue;
    }
    const long = keyTooLong(key);
    if (long) {
      problems.push(`${name}: its ${stage.source.key} ${long} — skipped`);
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

/**
 * The declarative pre-gate: a record passes when any pattern matches any of the fields. A record
 * with a text field over the cap passes without being looked at: it goes on to be declined.
 */
export function pregatePasses(stage: TransformStageDef, record: Record<string, unknown>): boolean {
  if (!stage.pregate) return true;
  if (oversizeField(record, stage.max_field_bytes ?? DEFAULT_MAX_FIELD_BYTES)) return true;
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
  const over = oversizeField(record, maxFieldBytes(stage));
  if (over) return decline(engine, stage, key, stage.declines.schema_invalid, capDetail('record', over, maxFieldBytes(stage)));
  if (!pregatePasses(stage, record)) return { kind: 'skipped', reason: 'pregate' };
  const provider = options.providers.get(stage.provider);
  const called = await callProvider(
    engine.store.cache,
    provider,
    {
      purpose: 'transform',
      prompt: renderPrompt(stage.prompt ?? '', { record }),
      input: { record },
      env: { PIPELINE_STAGE: stage.name },
      ...(options.signal ? { signal: options.signal } : {}),
    },
    { useCache: options.useCache, maxAnswerBytes: stage.max_answer_bytes },
  );
  if (!called.ok) {
    if (called.kind === 'outage') return { kind: 'untouched', reason: called.reason };
    return decline(engine, stage, key, stage.declines.invalid, called.reason);
  }
  const spent = called.cached || provider.deterministic ? {} : { spent: called.usage };
  return { ...(await judgeAnswer(engine, stage, source, called, options)), ...spent };
}

async function judgeAnswer(
  engine: Engine,
  stage: TransformStageDef,
  source: SourceRecord,
  called: Extract<Called, { ok: true }>,
  options: TransformOptions,
): Promise<TransformResult> {
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
  if (nestsDeeperThan(candidate, MAX_PRINT_DEPTH))
    return decline(engine, stage, key, stage.declines.schema_invalid, `the candidate nests more than ${MAX_PRINT_DEPTH} levels deep`);
  const over = oversizeField(candidate, maxFieldBytes(stage));
  if (over) return decline(engine, stage, key, stage.declines.schema_invalid, capDetail('candidate', over, maxFieldBytes(stage)));
  const schema = engine.pipeline.def.proposal.schema;
  const findings = engine.pipeline.schemas.check(schema, candidate);
  if (findings.length) return decline(engine, stage, key, stage.declines.schema_invalid, formatFindings(findings).slice(0, 5).join('; '));
  const created = await engine.create(key, candidate, { stage: stage.name, actor: options.actor, ...(source.id ? { id: source.id } : {}) });
  if (created.kind !== 'committed') return { kind: 'skipped', reason: 'handled' };
  await called.keep();
  return { kind: 'proposed', id: created.id };
}

const maxFieldBytes = (stage: TransformStageDef) => stage.max_field_bytes ?? DEFAULT_MAX_FIELD_BYTES;

function capDetail(what: string, over: { path: string; bytes: number }, cap: number): string {
  return `${overCap(`the ${what}'s ${over.path}`, over.bytes, cap)} (max_field_bytes)`;
}

/** The most of a decline's detail kept: it may quote the model (a refusal's reason), whose answer may be 1 MiB. */
const MAX_DETAIL_CHARS = 1000;

async function decline(engine: Engine, stage: TransformStageDef, key: string, reason: string, full: string | null): Promise<TransformResult> {
  const keyField = engine.pipeline.def.proposal.key;
  const detail = full === null ? null : full.slice(0, MAX_DETAIL_CHARS);
  await engine.store.appendLedger(stage.declines.ledger, { [keyField]: key, reason, detail, declined_at: engine.now() });
  return { kind: 'declined', reason, detail };
}

/** The source directory: --source, else the stage's (relative to the pipeline directory). */
export function sourceDir(engine: Engine, stage: TransformStageDef, override: string | undefined, cwd: string): string {
  return override ? path.resolve(cwd, override) : path.resolve(engine.pipeline.dir, stage.source.dir);
}
