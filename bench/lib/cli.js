/**
 * Timing the real `pipeline` binary: every run is a new process (a cold start of Node and the
 * bundle; the OS page cache stays warm), wrapped in `/usr/bin/time` for its peak RSS. Output
 * goes to a file, so a large `list --json` costs the command what writing it costs and nothing
 * for a pipe to the benchmark.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { BIN, ROOT } from './engine.js';

const TIME = '/usr/bin/time';

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** One run of `pipeline ARGS`; throws unless it exits with one of `codes`. */
export function runOnce(args, env, scratchDir, codes = [0]) {
  const out = path.join(scratchDir, 'stdout');
  const rss = path.join(scratchDir, 'rss');
  const fd = openSync(out, 'w');
  const withTime = existsSync(TIME);
  const argv = [...(withTime ? ['-f', '%M', '-o', rss, process.execPath] : []), BIN, '--dir', ROOT, ...args];
  const start = performance.now();
  const result = spawnSync(withTime ? TIME : process.execPath, argv, { env, stdio: ['ignore', fd, 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const ms = performance.now() - start;
  closeSync(fd);
  if (!codes.includes(result.status ?? -1)) {
    throw new Error(`pipeline ${args.join(' ')} exited ${result.status}: ${(result.stderr ?? '').slice(-2000)}`);
  }
  const maxRssKb = withTime ? Number(readFileSync(rss, 'utf8').trim().split('\n').pop()) : null;
  return { ms, maxRssKb, outBytes: statSync(out).size, stdout: () => readFileSync(out, 'utf8') };
}

/**
 * `runs` runs of one command (or of `argsOf(i)`, when each run needs its own arguments);
 * `before` runs ahead of each (e.g. to drop a cache). Returns every time, the median, and the
 * largest peak RSS seen.
 */
export function timeCommand(args, env, scratchDir, { runs = 5, before, codes, argsOf } = {}) {
  const times = [];
  let maxRssKb = 0;
  let last;
  for (let i = 0; i < runs; i++) {
    before?.();
    last = runOnce(argsOf ? argsOf(i) : args, env, scratchDir, codes);
    times.push(last.ms);
    maxRssKb = Math.max(maxRssKb, last.maxRssKb ?? 0);
  }
  return { runs: times.map((ms) => Math.round(ms * 10) / 10), medianMs: median(times), maxRssKb: maxRssKb || null, outBytes: last.outBytes, last };
}

/** Remove the status index a store keeps under .index/, so the next command rebuilds it. */
export function dropStatusIndex(storeDir) {
  rmSync(path.join(storeDir, '.index', 'proposals.tsv'), { force: true });
}
