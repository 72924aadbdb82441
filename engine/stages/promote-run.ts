/**
 * `run <promote stage>` for the batch driver: the work is the proposals in a promotable state
 * that carry no stamp yet (stamped ones are counted without being read).
 */
import type { PromoteStageDef } from '../config/types.js';
import type { Engine } from '../engine.js';
import { emptyPlan } from '../runner/plan.js';
import { tallyOf } from '../store/tally.js';
import type { StageRun } from '../runner/driver.js';
import { promotableStates, promote, recordKind } from './promote.js';
import { malformedFileNote } from '../outcome.js';

export function promoteRun(engine: Engine, stage: PromoteStageDef): StageRun<string> {
  const states = promotableStates(stage);
  return {
    // A rejection's row is `recorded`, not promoted (SPEC §5.6): the counts say which is which.
    outcomes: () => [...new Set(states.map((status) => recordKind(stage, status)))].flatMap((kind) => [kind, `already_${kind}`]).concat('refused'),
    noun: 'judged proposal',
    retryLabel: 'left for a retry',
    async select() {
      const counted: Record<string, number> = {};
      let total = 0;
      for (const tally of await tallyOf(engine.store, { status: states }, stage.stamp)) {
        if (tally.marked > 0) {
          const kind = `already_${recordKind(stage, tally.status)}`;
          counted[kind] = (counted[kind] ?? 0) + tally.marked;
        }
        total += tally.count - tally.marked;
      }
      return { units: { query: { status: states, without: stage.stamp } }, counted, total };
    },
    mustPlan: (options) => options.dryRun,
    async plan(ids) {
      return { ...emptyPlan(stage.name), items: ids.length };
    },
    async work(id, lease, options) {
      const read = await engine.store.read(id);
      if (read.kind === 'malformed') {
        // Made unreadable since the run selected it (SPEC §4: reported, skipped, never counted).
        options.note(malformedFileNote(id, read.reason));
        return undefined;
      }
      if (read.kind !== 'found') return undefined;
      const result = await promote(engine, stage, read.stored, 'run', lease);
      const warnings = result.warnings.map((warning) => `warning: ${warning}`);
      const note = (extra?: string) => [...warnings, ...(extra ? [extra] : [])].join('\n') || undefined;
      const kind = recordKind(stage, String(read.stored.proposal['status']));
      switch (result.outcome.kind) {
        case 'committed':
          return { outcome: kind, ...(note() ? { note: note()! } : {}) };
        case 'unchanged':
          return { outcome: `already_${kind}`, ...(note() ? { note: note()! } : {}) };
        case 'refused':
          return { outcome: 'refused', refused: true, note: note(`refused: ${result.outcome.message}`)! };
        case 'unjudged':
          // (A file that broke between the read and the commit: said once, by id, and skipped.)
          options.note(result.outcome.reason);
          return undefined;
      }
    },
  };
}
