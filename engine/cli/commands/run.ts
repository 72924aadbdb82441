/** `pipeline run [<stage>]`: one stage, or every automatic stage in pipeline order. */
import { setMaxListeners } from 'node:events';
import { constants } from 'node:os';
import { terminalProgress, silentProgress } from '../../runner/progress.js';
import type { RunOptions } from '../../runner/driver.js';
import { runStage } from '../../stages/index.js';
import { exitCodeOfRun, summaryJson, summaryLines, type Summary } from '../../runner/summary.js';
import { listWords } from '../../util/suggest.js';
import { positiveInteger, UsageError } from '../args.js';
import type { Context } from '../context.js';
import { Prompter } from '../prompter.js';
import { runReviewWalk } from '../walk.js';

/**
 * A yes/no question on the terminal. Ctrl-D (or input that ends) is no; Ctrl-C is no and calls
 * `interrupted` — on a terminal readline takes the key itself, so it is no signal to the process,
 * and the run must hear of it to stop as Ctrl-C anywhere stops it (exit 130). Never an error.
 */
export async function ask(context: Context, question: string, interrupted: () => void = () => {}): Promise<boolean> {
  const prompter = new Prompter(context);
  try {
    const answer = await prompter.ask(question);
    if (answer.kind === 'interrupt') interrupted();
    return answer.kind === 'line' && /^y(es)?$/i.test(answer.text.trim());
  } finally {
    prompter.close();
  }
}

/** The signals that stop a run cleanly. */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export async function runRun(context: Context): Promise<number> {
  const engine = await context.engine();
  const { values, positionals } = context.parsed;
  const name = positionals[0];
  const stages = engine.pipeline.stages;
  const usage = 'pipeline run [<stage>] [--concurrency N] [--limit N] [--dry-run] [--yes] [--no-cache] [--source DIR]';
  const concurrency = positiveInteger(values['concurrency'], 'concurrency', usage) ?? engine.pipeline.defaults.concurrency;
  const limit = positiveInteger(values['limit'], 'limit', usage);
  let selected;
  if (name !== undefined) {
    const stage = stages.find((candidate) => candidate.name === name);
    if (!stage) throw new UsageError(`unknown stage "${name}" (expected ${listWords(stages.map((candidate) => candidate.name))})`, `usage: ${usage}`);
    if (stage.kind === 'review') return runReviewWalk(context, engine, stage);
    selected = [stage];
  } else {
    selected = stages.filter((stage) => stage.kind !== 'review');
  }

  const controller = new AbortController();
  // Every call in flight listens for Ctrl-C: as many as the concurrency and the panels make.
  setMaxListeners(0, controller.signal);
  // SIGTERM (a service manager, `kill`) and SIGHUP (a closed terminal) stop a run the way Ctrl-C
  // does — nothing new claimed, what is committing finishes, the summary printed — never mid-commit.
  let stoppedBy: NodeJS.Signals = 'SIGINT';
  const interrupt = (signal: NodeJS.Signals = 'SIGINT') => {
    if (!controller.signal.aborted) {
      stoppedBy = signal;
      context.out.note(`\ninterrupted${signal === 'SIGINT' ? '' : ` (${signal})`}: finishing what is in flight, claiming nothing new…`);
    }
    controller.abort();
  };
  const removeHandler = context.io.onInterrupt(interrupt, STOP_SIGNALS);
  const options: RunOptions = {
    concurrency,
    limit,
    dryRun: values['dry-run'] === true,
    yes: values['yes'] === true,
    useCache: values['no-cache'] !== true,
    source: values['source'] as string | undefined,
    cwd: context.io.cwd,
    signal: controller.signal,
    interactive: context.io.interactive,
    ask: (question) => ask(context, question, () => interrupt('SIGINT')),
    progress: (stage, total) =>
      context.io.stderrIsTTY && !context.json
        ? terminalProgress(context.io.stderr, stage, total, (context.io.stderr as { columns?: number }).columns ?? 80)
        : silentProgress,
    note: (line) => context.out.note(line),
  };
  const summaries: Summary[] = [];
  try {
    for (const stage of selected) {
      if (controller.signal.aborted) break;
      const summary = await runStage(engine, stage, options);
      summaries.push(summary);
      if (!context.json) for (const line of summaryLines(summary)) context.out.line(line);
    }
  } finally {
    removeHandler();
  }
  if (context.json) context.out.data(name !== undefined ? summaryJson(summaries[0]!) : summaries.map(summaryJson));
  // 128 + the signal's number, as the shell reports a process the signal ended: 130, 143, 129.
  if (controller.signal.aborted) return 128 + constants.signals[stoppedBy];
  return exitCodeOfRun(summaries);
}
