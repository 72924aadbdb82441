/** In-process command line: an Io that records stdout and stderr, and proposal files written by hand. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliIn } from './cli.js';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `pipeline ARGS` in-process, off a terminal, with `env` over the test's environment (no configuration cache). */
export async function runIn(args: string[], env: Record<string, string>, options: { stderrIsTTY?: boolean; input?: string } = {}): Promise<Ran> {
  const { code, stdout, stderr } = await cliIn(args, { env: { PIPELINE_CONFIG_CACHE: 'off', NO_COLOR: '1', ...env }, ...options });
  return { code: code ?? 1, stdout, stderr };
}

/** Write a proposal file as an attacker would: any content, no audit history, no index entry. */
export function writeProposal(store: string, id: string, content: Record<string, unknown> | string): void {
  mkdirSync(path.join(store, 'proposals'), { recursive: true });
  writeFileSync(path.join(store, 'proposals', `${id}.json`), typeof content === 'string' ? content : `${JSON.stringify(content, null, 2)}\n`);
}

/** A pending proposal of the shipped pipeline with `claim`, as a hand-written file would hold it. */
export function pendingProposal(id: string, claim: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    artifact_id: `01JBQA${id.slice(6)}`,
    created_at: '2026-11-01T12:00:00Z',
    status: 'pending',
    candidate: {
      claim,
      rationale: 'The lockfile format changed in pnpm 8.',
      evidence: {
        artifact_ids: [`01JBQA${id.slice(6)}`],
        session_ids: ['s-1'],
        project_key: '0123456789ab',
        observed_at: '2026-11-01T10:00:00Z',
        resolution: 'Regenerated it.',
      },
      applies_to: { stack: ['pnpm'], scope: { kind: 'versioned', versions: { pnpm: '>=8 <9' } }, file_patterns: [], task_kinds: [] },
    },
    ...extra,
  };
}
