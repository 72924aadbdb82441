#!/usr/bin/env node
// `npm run demo`: the whole shipped pipeline, offline, on the example artifacts — transform, a
// scripted review (confirm at each visibility, pass one, leave one pending), judge, promote, then
// a few outcomes and the pool's ranking — in a fresh temporary store. No network, no API key.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = path.join(root, 'bin', 'pipeline.js');
const work = mkdtempSync(path.join(os.tmpdir(), 'pipeline-demo-'));
const store = path.join(work, 'store');
const env = { ...process.env, PIPELINE_STORE: store, PIPELINE_AUTHOR_SECRET_FILE: path.join(work, 'author_secret') };

function pipeline(args, { show = true, allow = [0] } = {}) {
  if (show) console.log(`\n$ pipeline ${args.join(' ')}`);
  const result = spawnSync(process.execPath, [bin, '--dir', root, ...args], { env, encoding: 'utf8' });
  if (show) {
    if (result.stdout) process.stdout.write(result.stdout);
    if (result.stderr) process.stdout.write(result.stderr.replace(/^/gm, '  '));
  }
  if (!allow.includes(result.status)) {
    console.error(`demo: "pipeline ${args.join(' ')}" exited ${result.status}`);
    process.exit(1);
  }
  return result.stdout;
}

console.log(`demo store: ${store}`);
pipeline(['validate']);
pipeline(['run', 'transform']);

const pending = JSON.parse(pipeline(['list', '--json'], { show: false }));
const byArtifact = Object.fromEntries(pending.map((proposal) => [proposal.artifact_id.slice(-4), proposal.id]));
console.log('\n# the review: a person decides what to share, and at which visibility');
pipeline(['list']);
pipeline(['confirm', byArtifact.A001, '--visibility', 'org']);
pipeline(['confirm', byArtifact.A002, '--visibility', 'public']);
pipeline(['confirm', byArtifact.A003, '--visibility', 'private']);
pipeline(['confirm', byArtifact.A004, '--visibility', 'public']);
pipeline(['confirm', byArtifact.A005, '--visibility', 'org', '--version-independent', 'The privilege is a server-side default of PostgreSQL itself, whichever client or driver version connects']);
pipeline(['pass', byArtifact.A006, 'about one local dashboard, not worth sharing']);
pipeline(['defer', byArtifact.A007]);

console.log('\n# the jury (offline checks judges), then promotion');
pipeline(['run', 'judge', '--yes']);
pipeline(['run', 'promote']);
pipeline(['status']);

const pool = path.join(store, 'approved');
const entries = readdirSync(pool).filter((name) => name.endsWith('.json'));
console.log(`\npool entries (${entries.length}) are in ${pool}:`);
for (const name of entries) {
  const entry = JSON.parse(readFileSync(path.join(pool, name), 'utf8'));
  console.log(`  ${name}  [${entry.visibility}, ${entry.consensus.agreed}/${entry.consensus.judges} judges agreed]  ${entry.claim}`);
}
const declined = readFileSync(path.join(store, 'declined.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
console.log(`\ndeclined (${declined.length}) are in ${path.join(store, 'declined.jsonl')}:`);
for (const row of declined) console.log(`  ${row.artifact_id}  ${row.reason}${row.verdict?.failed_criterion ? ` (${row.verdict.failed_criterion})` : ''}`);
console.log('\n# the pool in use: sessions say whether a lesson helped; top ranks by match × recency × hit weight');
const inUse = JSON.parse(pipeline(['pool', 'top', '--k', '5', '--json'], { show: false })).map((row) => row.id);
for (let i = 0; i < 3; i++) pipeline(['pool', 'outcome', inUse[0], 'hit', '--consumer', 'demo', '--session', `session-${i + 1}`]);
for (let i = 0; i < 5; i++) pipeline(['pool', 'outcome', inUse[1], 'miss', '--consumer', 'demo', '--session', `session-${i + 1}`], { show: i === 4 });
pipeline(['pool', 'top', '--k', '5']);
pipeline(['pool', 'prune']);
console.log(`\nthe audit log is ${path.join(store, 'events.jsonl')}; look at the lifecycle with: pipeline --store ${store} viz --out lifecycle.html`);
