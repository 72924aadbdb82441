/**
 * What the torture tests share: stores of confirmed proposals made through the engine's API, the
 * real `pipeline` binary started as a child process over such a store, and readers that check a
 * store after the damage is done — every proposal file, the audit log, the ledgers and the pool.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { BIN, fileConfigCache, proposalInput, ROOT, SECRET_FILE, testEngine, type TestEngine } from '../helpers.js';

const VISIBILITIES = ['org', 'public', 'private'] as const;

/**
 * `count` confirmed proposals at mixed visibilities; every fourth hedges its claim, which the
 * offline jury rejects, so runs produce both pool entries and ledger rows.
 */
export async function confirmedStore(count: number, visibilities: readonly string[] = VISIBILITIES): Promise<TestEngine & { ids: string[] }> {
  const t = await testEngine();
  const confirm = findReviewCommand(t.pipeline, 'confirm')!;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const hedged = i % 4 === 3 ? { claim: `pnpm 8 might refuse lockfiles written by pnpm 7 (case ${i})` } : {};
    const created = await t.engine.propose(proposalInput(hedged), { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(`propose: ${JSON.stringify(created)}`);
    const confirmed = await runReviewCommand(t.engine, confirm, created.id, { visibility: visibilities[i % visibilities.length] }, 'cli');
    if (confirmed.kind !== 'committed') throw new Error(`confirm: ${JSON.stringify(confirmed)}`);
    ids.push(created.id);
  }
  return { ...t, ids };
}

/** The environment that points the binary at `storeDir` (the test process's author secret, the file's config cache). */
export function storeEnv(storeDir: string): NodeJS.ProcessEnv {
  return { ...process.env, PIPELINE_STORE: storeDir, PIPELINE_AUTHOR_SECRET_FILE: SECRET_FILE, PIPELINE_CONFIG_CACHE: fileConfigCache(), NO_COLOR: '1' };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Start `pipeline ARGS` in the repository (the shipped pipeline); `done` settles when it exits. */
export function start(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<Finished> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

export const run = (args: string[], env: NodeJS.ProcessEnv): Promise<Finished> => start(args, env).done;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rows of a JSONL file; lines that do not parse (torn by a crash) are counted, not thrown. */
export function readRows(file: string): { rows: Record<string, unknown>[]; torn: string[] } {
  if (!existsSync(file)) return { rows: [], torn: [] };
  const rows: Record<string, unknown>[] = [];
  const torn: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      rows.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      torn.push(line);
    }
  }
  return { rows, torn };
}

/** Every proposal file in the store, parsed; throws naming the first one that does not parse. */
export function readProposals(storeDir: string): Map<string, Record<string, any>> {
  const dir = path.join(storeDir, 'proposals');
  const out = new Map<string, Record<string, any>>();
  for (const name of readdirSync(dir)) {
    if (!/^[0-7][0-9A-HJKMNP-TV-Z]{25}\.json$/.test(name)) continue; // temp files of killed writers are not proposals
    const text = readFileSync(path.join(dir, name), 'utf8');
    try {
      out.set(name.slice(0, 26), JSON.parse(text) as Record<string, any>);
    } catch (error) {
      throw new Error(`${name} is corrupt (${(error as Error).message}): ${JSON.stringify(text.slice(0, 200))}`);
    }
  }
  return out;
}

/** Audit rows per proposal id. */
export function auditById(storeDir: string): Map<string, Record<string, unknown>[]> {
  const byId = new Map<string, Record<string, unknown>[]>();
  for (const row of readRows(path.join(storeDir, 'events.jsonl')).rows) {
    const id = String(row['id']);
    byId.set(id, [...(byId.get(id) ?? []), row]);
  }
  return byId;
}

/** The audit rows of one proposal that record a verdict (approve / reject). */
export const verdictRows = (rows: readonly Record<string, unknown>[] = []) => rows.filter((row) => row['event'] === 'approve' || row['event'] === 'reject');
