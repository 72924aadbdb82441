/**
 * `run <transform stage>` for the batch driver: the work is the source records not handled yet
 * and past the pre-gate, claimed by their keys; each one becomes a proposal, a declined row, or
 * — on an outage — nothing at all (left for the next run).
 */
import type { TransformStageDef } from '../config/types.js';
import type { Engine } from '../engine.js';
import { EXIT, PipelineError } from '../errors.js';
import type { ProviderSource } from '../providers/index.js';
import { singleCallPlan } from '../runner/plan.js';
import type { StageRun } from '../runner/driver.js';
import { pregatePasses, readSources, sourceDir, transformOne, type SourceRecord } from './transform.js';

export function transformRun(engine: Engine, stage: TransformStageDef, providers: ProviderSource): StageRun<SourceRecord> {
  const provider = providers.get(stage.provider);
  return {
    outcomes: () => ['proposed', 'declined', 'untouched', 'already_handled', 'skipped_by_pregate'],
    noun: 'record',
    retryLabel: 'left untouched',
    async select(options) {
      const dir = sourceDir(engine, stage, options.source, options.cwd);
      const { records, problems, unreadable } = readSources(dir, stage);
      if (unreadable)
        throw new PipelineError('run.source', `${stage.name}: ${unreadable}`, {
          exitCode: EXIT.refused,
          hint: options.source ? 'check the --source directory' : `check source.dir in ${stage.file}`,
        });
      for (const problem of problems) options.note(`${stage.name}: ${problem}`);
      const counted = { already_handled: 0, skipped_by_pregate: 0 };
      const todo: SourceRecord[] = [];
      for (const record of records) {
        if (await engine.keyHandled(record.key)) counted.already_handled++;
        else if (!pregatePasses(stage, record.record)) counted.skipped_by_pregate++;
        else todo.push(record);
      }
      // Ids are given in source order before the batch starts, so proposals sort like their records.
      const items = todo.map((record) => ({ ...record, id: engine.ids() }));
      return { units: { items, keyOf: (record: SourceRecord) => record.key }, counted, total: items.length };
    },
    mustPlan: (options) => provider.paid || options.dryRun,
    async plan(records) {
      return singleCallPlan(stage.name, records.length, provider);
    },
    async work(record, _lease, options) {
      const result = await transformOne(engine, stage, record, {
        providers,
        useCache: options.useCache,
        actor: 'run',
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const usage = result.spent ? [result.spent] : [];
      switch (result.kind) {
        case 'proposed':
          return { outcome: 'proposed', usage };
        case 'declined':
          return { outcome: 'declined', usage };
        case 'skipped':
          return { outcome: result.reason === 'pregate' ? 'skipped_by_pregate' : 'already_handled', usage };
        case 'untouched':
          return { outcome: 'untouched', retry: true, usage, note: `${stage.name}: ${record.key} left untouched (retried next run): ${result.reason}` };
      }
    },
    progressLabel: (summary) => `${summary.counts['proposed'] ?? 0} proposed`,
  };
}
