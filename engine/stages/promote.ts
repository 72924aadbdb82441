/**
 * The promote stage (SPEC §5.6): the terminal record of a judged proposal — a pool entry or a
 * ledger row, mapped in YAML — lands first, and only then is the stamp (promoted_at) committed.
 * Idempotent: an entry or row is never written twice; a stamped proposal is a no-op success.
 */
import type { PromoteStageDef } from '../config/types.js';
import type { Actor, Engine } from '../engine.js';
import { evaluate, secretsUsed } from '../expr/evaluate.js';
import { refused, type Outcome } from '../outcome.js';
import { readSecret } from '../secrets.js';
import type { Stored } from '../store/types.js';
import { hasPath, setPath } from '../util/json-path.js';
import { listWords } from '../util/suggest.js';

export interface PromoteResult {
  outcome: Outcome;
  warnings: string[];
}

export function promotableStates(stage: PromoteStageDef): string[] {
  return Object.keys(stage.outcomes);
}

export async function promote(engine: Engine, stage: PromoteStageDef, stored: Stored, actor: Actor): Promise<PromoteResult> {
  const { id, proposal } = stored;
  const status = String(proposal['status']);
  const outcome = stage.outcomes[status];
  if (!outcome) return { outcome: refused('status', `${id} is ${status}; only ${listWords(promotableStates(stage))} proposals are promoted`, undefined, id), warnings: [] };
  if (hasPath(proposal, stage.stamp)) {
    // A person repeating promote finishes a crash between the stamp and its audit row (batch
    // runs repair these all at once before they start).
    if (actor === 'cli' && (await engine.store.lastAudit(id))?.event !== 'promote') {
      await engine.store.locked(id, async () => {
        if ((await engine.store.lastAudit(id))?.event !== 'promote') await engine.store.appendAudit({ at: engine.now(), id, event: 'promote', from: status, to: status, stage: stage.name, actor });
      });
    }
    return { outcome: { kind: 'unchanged', id, event: 'promote', status, proposal, message: `${id} is already promoted; nothing changed` }, warnings: [] };
  }
  const expr = outcome.entry ?? outcome.row ?? {};
  const secrets: Record<string, string> = {};
  const warnings: string[] = [];
  for (const name of secretsUsed(expr)) {
    const def = engine.pipeline.def.secrets?.[name];
    if (!def) return { outcome: refused('secret', `secret ${name} is not declared`, undefined, id), warnings };
    const secret = await readSecret(name, def, engine.env);
    if (!secret.ok) return { outcome: refused('secret', `${id} (${status}) was not promoted: ${secret.message}`, undefined, id), warnings };
    warnings.push(...secret.warnings);
    secrets[name] = secret.value;
  }
  const now = engine.now();
  const { value, missing } = evaluate(expr, { root: proposal, now, secrets });
  if (missing.length) {
    return { outcome: refused('missing_fields', `${id} (${status}) was not promoted: it has no ${listWords([...new Set(missing)], 'and')}`, undefined, id), warnings };
  }
  if (outcome.write) {
    await engine.store.writeEntry(outcome.write, id, value);
  } else if (outcome.append && outcome.key) {
    const { append, key } = outcome;
    const row = value as Record<string, unknown>;
    // Checked and appended under the proposal's lock: two promoters never both append the row.
    await engine.store.locked(id, async () => {
      if (!(await engine.store.ledgerHas(append, key, row[key]))) await engine.store.appendLedger(append, row);
    });
  }
  const next = structuredClone(proposal);
  setPath(next, stage.stamp, now);
  const committed = await engine.store.commit(id, stored.version, next, { at: now, id, event: 'promote', from: status, to: status, stage: stage.name, actor }, []);
  if (!committed.ok) {
    // Another promoter may have stamped it meanwhile: then this is the no-op success it looks like.
    const again = await engine.store.read(id);
    if (again.kind === 'found' && hasPath(again.stored.proposal, stage.stamp)) {
      return { outcome: { kind: 'unchanged', id, event: 'promote', status, proposal: again.stored.proposal, message: `${id} is already promoted; nothing changed` }, warnings };
    }
    const current = again.kind === 'found' ? String(again.stored.proposal['status']) : 'missing';
    return { outcome: refused('changed', `${id} (now ${current}) changed while it was being promoted; its record is written, run promote again to stamp it`, undefined, id), warnings };
  }
  return { outcome: { kind: 'committed', id, event: 'promote', from: status, to: status, proposal: next, version: committed.version }, warnings };
}

/**
 * Promote a proposal right after its verdict was committed. A failure is reported (`failure`),
 * never thrown: it leaves the verdict as it is and does not change the exit code (SPEC §5.4).
 */
export async function promoteAfterVerdict(engine: Engine, stage: PromoteStageDef, verdict: Extract<Outcome, { kind: 'committed' }>, actor: Actor): Promise<{ warnings: string[]; failure?: string }> {
  try {
    const { outcome, warnings } = await promote(engine, stage, { id: verdict.id, proposal: verdict.proposal, version: verdict.version }, actor);
    return outcome.kind === 'refused' ? { warnings, failure: outcome.message } : { warnings };
  } catch (error) {
    return { warnings: [], failure: error instanceof Error ? error.message : String(error) };
  }
}
