/**
 * Child process: the PostgreSQL store (SPEC §9, §11) against a throwaway server started from the
 * machine's binaries (the tests' own starter, test/pg/server.ts), fsync on.
 *
 * - throughput: N confirmed proposals judged + promoted by W real `pipeline run judge` processes
 *   (W = 1, 2, 4; instant offline judges) on one database, against one process on the file store;
 *   three rounds (one with --quick), each running every configuration once; the median wall time;
 * - latency: judges of fixed latency L = 1 s (a local OpenAI-compatible server) with W workers ×
 *   concurrency C; wall ÷ N·L/(W·C), for N = 4 and 16 rounds of W·C;
 * - size: `pipeline status` and `pipeline list --state confirmed --json` at 1,000,000 proposals
 *   (generated in the database; 1,000 of them confirmed), warm, median of 3.
 *
 * Usage: node bench/scenarios/postgres.js [--quick] [--parts throughput,latency,size] [--n N]   → one JSON line on stdout.
 * `--n` sets the throughput run's size (default 2,000): at 2,000 each worker's start-up (~0.3 s of
 * CPU) is a tenth of the run; a longer queue measures the steady state.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { parseDocument } from 'yaml';
import { monotonicFactory } from 'ulid';
import { median } from '../lib/cli.js';
import { benchEnv, BIN, ROOT, scratch } from '../lib/engine.js';
import { proposalIn, writeStore } from '../lib/fixtures.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
// `--parts throughput,latency,size` runs only those parts (all by default).
const partsIndex = process.argv.indexOf('--parts');
const parts = new Set(partsIndex >= 0 ? process.argv[partsIndex + 1].split(',') : ['throughput', 'latency', 'size']);
const DIST = path.join(ROOT, 'dist', 'engine');
const { loadPipeline } = await import(path.join(DIST, 'config', 'load.js'));
const { openStore, openFileStore } = await import(path.join(DIST, 'store', 'open.js'));

const work = scratch('pipeline-bench-pg-');
const log = (line) => process.stderr.write(`  ${line}\n`);

/** The tests' server starter, compiled on the spot (it is TypeScript). */
async function startServer() {
  const out = path.join(work.dir, 'pg-server.mjs');
  await build({ entryPoints: [path.join(ROOT, 'test', 'pg', 'server.ts')], outfile: out, bundle: true, platform: 'node', format: 'esm', logLevel: 'warning' });
  const { postgresBin, startPostgres } = await import(pathToFileURL(out).href);
  const bin = postgresBin();
  if (!bin) throw new Error('no PostgreSQL binaries in /usr/lib/postgresql (apt-get install postgresql)');
  return startPostgres(bin);
}

const juried = (index) => (index % 2 ? 'org' : 'public');

let schemas = 0;
const schemaUrl = (server) => `${server.url}?schema=bench_${++schemas}`;

/** A pipeline directory: the shipped one, or a copy whose judges call `baseUrl` (fixed latency). */
function pipelineDir(baseUrl) {
  if (!baseUrl) return ROOT;
  const dir = path.join(work.dir, `pipeline-${schemas}`);
  for (const entry of ['pipeline.yaml', 'machines', 'stages', 'rubrics', 'schemas']) cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  const main = parseDocument(readFileSync(path.join(dir, 'pipeline.yaml'), 'utf8'));
  main.setIn(['providers', 'fixed-latency'], { kind: 'openai', base_url: baseUrl, model: 'bench', paid: false, concurrency: 1024, attempts: 1 });
  writeFileSync(path.join(dir, 'pipeline.yaml'), main.toString());
  const judge = parseDocument(readFileSync(path.join(dir, 'stages', 'judge.yaml'), 'utf8'));
  judge.setIn(['judges', 'standard'], 'fixed-latency');
  judge.setIn(['judges', 'adversarial'], 'fixed-latency');
  writeFileSync(path.join(dir, 'stages', 'judge.yaml'), judge.toString());
  return dir;
}

/** N confirmed proposals in a fresh file store, copied into `location` (another store) when given. */
async function confirmedStore(n, location, visibility) {
  const files = path.join(work.dir, `files-${n}-${schemas}-${Math.random().toString(36).slice(2, 8)}`);
  writeStore(files, n, n, visibility);
  if (!location) return files;
  const pipeline = await loadPipeline(ROOT, benchEnv(work.dir), { useCache: false });
  const from = openFileStore(pipeline, files);
  const to = openStore(pipeline, location);
  await to.load(from.dump());
  await to.close();
  return location;
}

/**
 * W real `pipeline run judge` processes over one store; the wall time until the last one exits.
 * The configuration cache is filled first (one `status`), as after any earlier command on that
 * configuration: the workers time a run, not a first validation (SPEC §9 times that as a cold start).
 */
async function runWorkers(dir, location, workers, concurrency, env) {
  const warm = spawnSync(process.execPath, [BIN, '--dir', dir, 'status'], { env: { ...env, PIPELINE_STORE: location }, stdio: 'ignore' });
  if (warm.status !== 0) throw new Error(`pipeline status in ${dir}: exit ${warm.status}`);
  const start = performance.now();
  const codes = await Promise.all(
    Array.from(
      { length: workers },
      () =>
        new Promise((resolve) => {
          const child = spawn(process.execPath, [BIN, '--dir', dir, 'run', 'judge', '--yes', '--json', '--concurrency', String(concurrency)], {
            env: { ...env, PIPELINE_STORE: location },
            stdio: ['ignore', 'ignore', 'inherit'],
          });
          child.on('exit', (code) => resolve(code));
        }),
    ),
  );
  return { wallMs: performance.now() - start, codes };
}

async function judgeServer(latency) {
  const child = spawn(process.execPath, [path.join(here, '..', 'lib', 'judge-server.js'), String(latency)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = await createInterface({ input: child.stdout })
    [Symbol.asyncIterator]()
    .next()
    .then((next) => [next.value]);
  return { child, url: `http://127.0.0.1:${JSON.parse(line).port}/v1` };
}

/** 1,000,000 proposals written straight into the database (1,000 confirmed), then vacuumed. */
async function millionRows(server, total, confirmed) {
  const url = schemaUrl(server);
  const pipeline = await loadPipeline(ROOT, benchEnv(work.dir), { useCache: false });
  const store = openStore(pipeline, url);
  await store.appendLedger('declined', { artifact_id: 'bench', reason: 'created the tables' });
  await store.close();
  const pg = (await import('pg')).default;
  const schema = new URL(url).searchParams.get('schema');
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  const ids = monotonicFactory();
  const stride = Math.floor(total / confirmed);
  const batch = 5000;
  for (let start = 0; start < total; start += batch) {
    const rows = { id: [], key: [], status: [], marks: [], doc: [] };
    for (let i = start; i < Math.min(total, start + batch); i++) {
      const id = ids(Date.parse('2026-01-01T00:00:00Z'));
      const status = i % stride === 0 ? 'confirmed' : ['pending', 'passed', 'approved', 'rejected'][i % 4];
      const artifact = `01J0ART${String(i).padStart(19, '0')}`;
      rows.id.push(id);
      rows.key.push(artifact);
      rows.status.push(status);
      rows.marks.push(status === 'approved' || status === 'rejected' ? '{promoted_at}' : '{}');
      rows.doc.push(`${JSON.stringify(proposalIn(status, i, id, artifact), null, 2)}\n`);
    }
    await client.query(
      `INSERT INTO "${schema}".proposals (id, key, status, marks, doc, version) SELECT id, key, status, marks::text[], doc, 1 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(id, key, status, marks, doc)`,
      [rows.id, rows.key, rows.status, rows.marks, rows.doc],
    );
  }
  await client.query(`VACUUM ANALYZE "${schema}".proposals`);
  await client.end();
  return url;
}

/** Median wall time of `pipeline ARGS` over `runs` runs, after one warm-up. */
function timed(args, env, runs = 3) {
  spawnSync(process.execPath, [BIN, ...args], { env, stdio: 'ignore' });
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const result = spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    times.push(performance.now() - start);
    if (result.status !== 0) throw new Error(`pipeline ${args.join(' ')}: exit ${result.status}: ${result.stderr}`);
  }
  return median(times);
}

const server = await startServer();
const env = benchEnv(work.dir);
const result = { throughput: [], latency: [], size: null };
try {
  const nIndex = process.argv.indexOf('--n');
  const n = nIndex >= 0 ? Number(process.argv[nIndex + 1]) : quick ? 500 : 2000;
  if (parts.has('throughput')) {
    // The file store's wall time on a disk moves by up to 2× from one minute to the next (how
    // many inodes were freed lately, see docs/performance.md): each configuration runs once per
    // round, the rounds alternate them, and each reports the median of its rounds.
    const rounds = quick ? 1 : 3;
    const configurations = [{ store: 'file', workers: 1 }, ...[1, 2, 4].map((workers) => ({ store: 'postgres', workers }))];
    const walls = configurations.map(() => []);
    const codes = configurations.map(() => []);
    for (let round = 1; round <= rounds; round++) {
      for (const [index, { store, workers }] of configurations.entries()) {
        log(`throughput: ${n} proposals, ${store === 'file' ? 'file store' : 'PostgreSQL'}, ${workers} worker(s), round ${round} of ${rounds}…`);
        const location = store === 'file' ? await confirmedStore(n) : await confirmedStore(n, schemaUrl(server));
        const run = await runWorkers(ROOT, location, workers, 8, env);
        walls[index].push(run.wallMs);
        codes[index].push(...run.codes);
      }
    }
    for (const [index, { store, workers }] of configurations.entries()) {
      const runs = walls[index];
      const wallMs = median(runs);
      result.throughput.push({
        store,
        workers,
        n,
        wallMs,
        perSecond: (n * 1000) / wallMs,
        runs: runs.map(Math.round),
        ...(store === 'postgres' ? { codes: codes[index] } : {}),
      });
    }
  }

  const latency = 1000;
  if (parts.has('latency')) {
    const judge = await judgeServer(latency);
    try {
      for (const [workers, concurrency] of quick
        ? [[2, 4]]
        : [
            [1, 8],
            [2, 8],
            [4, 8],
          ]) {
        // Two run lengths: 4 rounds (ideal 4 s: the workers' start-up, ~0.3 s each on two vCPUs,
        // is a tenth of it) and 16 rounds (ideal 16 s, what a queue of slow model calls is like).
        for (const rounds of quick ? [4] : [4, 16]) {
          const n = workers * concurrency * rounds;
          log(`latency: L = ${latency} ms, ${workers} worker(s) × C = ${concurrency}, N = ${n}…`);
          // Every proposal goes to the jury (org or public), as in the file store's latency scenario:
          // a private one skips it and would make the run faster than N·L/(W·C).
          const location = await confirmedStore(n, schemaUrl(server), juried);
          const run = await runWorkers(pipelineDir(judge.url), location, workers, concurrency, env);
          const idealMs = (n * latency) / (workers * concurrency);
          result.latency.push({
            workers,
            concurrency,
            n,
            rounds,
            latencyMs: latency,
            wallMs: run.wallMs,
            idealMs,
            ratio: run.wallMs / idealMs,
            codes: run.codes,
          });
        }
      }
    } finally {
      judge.child.kill('SIGTERM');
    }
  }

  if (parts.has('size')) {
    const total = quick ? 100_000 : 1_000_000;
    log(`size: ${total} proposals in the database…`);
    const big = await millionRows(server, total, 1000);
    const bigEnv = { ...env, PIPELINE_STORE: big };
    result.size = {
      proposals: total,
      statusMs: timed(['status'], bigEnv),
      listConfirmedMs: timed(['list', '--state', 'confirmed', '--json'], bigEnv),
    };
  }
} finally {
  server.stop();
  work.cleanup();
}
process.stdout.write(`${JSON.stringify(result)}\n`);
