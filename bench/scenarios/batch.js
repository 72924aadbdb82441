/**
 * Child process: the real binary's batch run on the write path. A store of N confirmed proposals
 * (written directly in the store's format, see fixtures.js), then `pipeline run judge --yes` —
 * the shipped offline jury and `then: promote` — timed around the process, with its user and
 * system CPU and peak RSS from `/usr/bin/time`. Per-proposal ms = wall ÷ N, start-up included.
 *
 * Usage: node bench/scenarios/batch.js N [runs]   → one JSON line on stdout.
 * Each run gets a fresh store. PIPELINE_FAILPOINT and the like are not set.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { benchEnv, BIN, ROOT, scratch } from '../lib/engine.js';
import { writeStore } from '../lib/fixtures.js';
import { median } from '../lib/cli.js';

const n = Number(process.argv[2] ?? 1000);
const runs = Number(process.argv[3] ?? 1);
const TIME = '/usr/bin/time';
const result = { n, runs: [] };

for (let run = 0; run < runs; run++) {
  const work = scratch('pipeline-bench-batch-');
  try {
    const store = path.join(work.dir, 'store');
    writeStore(store, n, n);
    const env = benchEnv(work.dir);
    // A first command warms the configuration cache, as a user's earlier commands would have.
    spawnSync(process.execPath, [BIN, '--dir', ROOT, '--store', store, 'status'], { env, stdio: 'ignore' });
    const usage = path.join(work.dir, 'usage');
    const withTime = existsSync(TIME);
    const argv = [BIN, '--dir', ROOT, '--store', store, 'run', 'judge', '--yes'];
    const start = performance.now();
    const child = spawnSync(withTime ? TIME : process.execPath, withTime ? ['-f', '%U %S %M', '-o', usage, process.execPath, ...argv] : argv, {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const ms = performance.now() - start;
    if (child.status !== 0) throw new Error(`run judge exited ${child.status}: ${child.stderr.slice(-2000)}`);
    const [user, sys, rss] = withTime ? readFileSync(usage, 'utf8').trim().split('\n').pop().split(' ').map(Number) : [null, null, null];
    result.runs.push({ ms: Math.round(ms), perProposalMs: ms / n, userS: user, sysS: sys, maxRssKb: rss });
  } finally {
    work.cleanup();
  }
}
result.medianPerProposalMs = median(result.runs.map((each) => each.perProposalMs));
process.stdout.write(`${JSON.stringify(result)}\n`);
