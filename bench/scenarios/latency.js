/**
 * Child process: concurrency efficiency. N confirmed proposals (org/public, so each one empanels
 * both judges) are judged by `runStage(judge)` at stage concurrency C, where both judge types map
 * to an `openai` provider (`paid: false`, its own concurrency cap far above C) talking to a local
 * server that answers after L ms. The panel's two calls run in parallel, so a proposal takes L
 * and C proposals are in flight: the ideal wall time is ceil(N / C) · L.
 *
 * Usage: node bench/scenarios/latency.js C N L [promote|judge-only]   → one JSON line on stdout.
 * `promote` (the default) keeps the shipped `then: promote`, as `pipeline run judge` does, and
 * with the command line's V8 settings (bin/v8-flags.js: tiering, heap growth), as it runs.
 */
import '../../bin/v8-flags.js';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { BIN, benchEnv, openEngine, ROOT, runOptions, runStage, scratch, stageOf } from '../lib/engine.js';
import { writeStore } from '../lib/fixtures.js';

const [c, n, latency] = process.argv.slice(2, 5).map(Number);
const mode = process.argv[5] ?? 'promote';
const here = path.dirname(fileURLToPath(import.meta.url));

/** A copy of the shipped pipeline whose two judge types call the server at `baseUrl`. */
function latencyPipeline(dir, baseUrl) {
  for (const entry of ['pipeline.yaml', 'machines', 'stages', 'rubrics', 'schemas']) cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  const main = parseDocument(readFileSync(path.join(dir, 'pipeline.yaml'), 'utf8'));
  main.setIn(['providers', 'fixed-latency'], { kind: 'openai', base_url: baseUrl, model: 'bench', paid: false, concurrency: 1024, attempts: 1 });
  writeFileSync(path.join(dir, 'pipeline.yaml'), main.toString());
  const judge = parseDocument(readFileSync(path.join(dir, 'stages', 'judge.yaml'), 'utf8'));
  judge.setIn(['judges', 'standard'], 'fixed-latency');
  judge.setIn(['judges', 'adversarial'], 'fixed-latency');
  writeFileSync(path.join(dir, 'stages', 'judge.yaml'), judge.toString());
}

/** CPU time of this process's main thread (the event loop), in ms, from /proc; undefined elsewhere. */
function mainThreadCpuMs() {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'latin1').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in ticks of 1/100 s (USER_HZ)
  } catch {
    return undefined;
  }
}

async function startServer() {
  const child = spawn(process.execPath, [path.join(here, '..', 'lib', 'judge-server.js'), String(latency)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = await createInterface({ input: child.stdout })
    [Symbol.asyncIterator]()
    .next()
    .then((next) => [next.value]);
  return { child, url: `http://127.0.0.1:${JSON.parse(line).port}` };
}

const work = scratch('pipeline-bench-latency-');
const server = await startServer();
try {
  const dir = path.join(work.dir, 'pipeline');
  latencyPipeline(dir, `${server.url}/v1`);
  const storeDir = path.join(work.dir, 'store');
  writeStore(storeDir, n, n, (index) => (index % 2 ? 'org' : 'public'));
  // The store as the engine leaves it: indexed (`<store>/.index/`), which a store written in its
  // format directly is not — as in batch.js, a first command builds it. A run on a store no
  // command has indexed (after a bulk import) reads every file first: the `status`/`list` first
  // rows measure that.
  const indexed = spawnSync(process.execPath, [BIN, '--dir', dir, '--store', storeDir, 'status'], {
    env: benchEnv(work.dir),
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  });
  if (indexed.status !== 0) throw new Error(`status exited ${indexed.status}: ${indexed.stderr.slice(-2000)}`);
  const engine = await openEngine(dir, storeDir, benchEnv(work.dir));
  const stage = mode === 'promote' ? stageOf(engine, 'judge') : { ...stageOf(engine, 'judge'), then: undefined };
  const run = runOptions(c);
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadCpuMs();
  const start = performance.now();
  const startAt = performance.timeOrigin + start;
  const summary = await runStage(engine, stage, run.options);
  const wallMs = performance.now() - start;
  const endAt = performance.timeOrigin + start + wallMs;
  // CPU of this process (every thread: the event loop, the thread pool, GC) per proposal.
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMsPerProposal = (cpu.user + cpu.system) / 1000 / n;
  // The event loop's own share (Linux; 10 ms ticks, so a figure for runs of seconds): the bound at C = 32.
  const mainMs = mainThreadCpuMs();
  const mainCpuMsPerProposal = mainMs === undefined || mainBefore === undefined ? undefined : (mainMs - mainBefore) / n;
  const stats = await (await fetch(`${server.url}/stats`)).json();
  const idealMs = Math.ceil(n / c) * latency;
  process.stdout.write(
    `${JSON.stringify({ c, n, latencyMs: latency, mode, wallMs, idealMs, ratio: wallMs / idealMs, cpuMsPerProposal, mainCpuMsPerProposal, serverCpuMsPerProposal: stats.cpuMs / n, firstRequestMs: stats.firstRequestAt - startAt, afterLastAnswerMs: endAt - stats.lastAnswerAt, turnaroundMs: stats.turnaroundMs, requests: stats.requests, maxInFlight: stats.maxInFlight, counts: summary.counts, notes: run.notes.slice(0, 3), maxRssKb: process.resourceUsage().maxRSS })}\n`,
  );
} finally {
  server.child.kill('SIGTERM');
  work.cleanup();
}
