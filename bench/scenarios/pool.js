/**
 * The pool in use (SPEC §9): `pool top` over 100,000 approved proposals, first (no derived index
 * yet: it is built from a listing) and warm (5 runs, median), with a stack filter and with file
 * and task filters; one `pool outcome` (5 runs on different proposals); `pool top` again right
 * after those outcomes (the index catches up on the 5 changed proposals); and `pool prune` as a
 * dry run. For comparison, `pool outcome` on a pool of 20: what a commit costs when the store is
 * small. Each run is a new process of the real binary, as a person or a hook would start it.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { benchEnv, scratch } from '../lib/engine.js';
import { runOnce, timeCommand } from '../lib/cli.js';
import { writePoolStore } from '../lib/fixtures.js';

function summary(timing) {
  return { medianMs: timing.medianMs, runs: timing.runs, maxRssKb: timing.maxRssKb, outBytes: timing.outBytes };
}

/** Every pool measurement at one pool size. `log` reports progress on stderr. */
export function measurePool(size, { warmRuns = 5, log = () => {} } = {}) {
  const work = scratch('pipeline-bench-pool-');
  try {
    const env = benchEnv(work.dir);
    const store = path.join(work.dir, 'store');
    const started = performance.now();
    const { samples } = writePoolStore(store, size);
    log(`  generated ${size} approved proposals in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    runOnce(['--store', store, 'status'], env, work.dir); // fills the configuration cache (and the status index)
    const args = (...rest) => ['--store', store, ...rest];
    const dropIndex = () => rmSync(path.join(store, 'cache'), { recursive: true, force: true });
    const topArgs = args('pool', 'top', '--stack', 'vite', '--k', '3', '--json');
    const result = { size };
    result.topFirst = summary(timeCommand(topArgs, env, work.dir, { runs: 1, before: dropIndex }));
    const warm = timeCommand(topArgs, env, work.dir, { runs: warmRuns });
    if (JSON.parse(warm.last.stdout()).length !== 3) throw new Error('pool top did not print 3 rows');
    result.topWarm = summary(warm);
    const fileTask = args('pool', 'top', '--file', 'src/vite.config.ts', '--task', 'dependency-upgrade', '--k', '10');
    result.topWarmFileTask = summary(timeCommand(fileTask, env, work.dir, { runs: warmRuns }));
    log(`  pool top: first ${Math.round(result.topFirst.medianMs)} ms, warm ${Math.round(result.topWarm.medianMs)} ms`);
    const ids = [...samples];
    const outcomeArgs = () => args('pool', 'outcome', ids.shift(), 'hit', '--consumer', 'bench');
    result.outcome = summary(timeCommand([], env, work.dir, { runs: warmRuns, argsOf: outcomeArgs }));
    result.topAfterOutcomes = summary(timeCommand(topArgs, env, work.dir, { runs: warmRuns }));
    result.pruneDry = summary(timeCommand(args('pool', 'prune', '--json'), env, work.dir, { runs: 3 }));
    const round = (timing) => `${Math.round(timing.medianMs)} ms`;
    log(`  pool outcome ${round(result.outcome)}; top after outcomes ${round(result.topAfterOutcomes)}; prune (dry) ${round(result.pruneDry)}`);
    const small = path.join(work.dir, 'small');
    const few = writePoolStore(small, 20).samples;
    runOnce(['--store', small, 'status'], env, work.dir);
    const smallArgs = () => ['--store', small, 'pool', 'outcome', few.shift(), 'hit', '--consumer', 'bench'];
    result.outcomeSmallStore = summary(timeCommand([], env, work.dir, { runs: Math.min(warmRuns, 2), argsOf: smallArgs }));
    return result;
  } finally {
    work.cleanup();
  }
}
