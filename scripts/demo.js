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
const secret = path.join(work, 'author_secret');
const env = { ...process.env, PIPELINE_STORE: store, PIPELINE_AUTHOR_SECRET_FILE: secret };

/** An argument as a POSIX shell reads it back: plain when it can be, else in single quotes. */
function shellQuote(arg) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function pipeline(args, { show = true, allow = [0] } = {}) {
  if (show) console.log(`\n$ npx pipeline ${args.map(shellQuote).join(' ')}`);
  const result = spawnSync(process.execPath, [bin, '--dir', root, ...args], { env, encoding: 'utf8' });
  if (show) {
    if (result.stdout) process.stdout.write(result.stdout);
    if (result.stderr) process.stdout.write(result.stderr.replace(/^(?=.)/gm, '  '));
  }
  if (!allow.includes(result.status)) {
    console.error(`demo: "pipeline ${args.join(' ')}" exited ${result.status}`);
    process.exit(1);
  }
  return result.stdout;
}

console.log(`demo store: ${store}`);
console.log('every command below can be run again as it is shown, from this directory, after:');
console.log(`  export PIPELINE_STORE=${shellQuote(store)} PIPELINE_AUTHOR_SECRET_FILE=${shellQuote(secret)}`);
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
pipeline([
  'confirm',
  byArtifact.A005,
  '--visibility',
  'org',
  '--version-independent',
  'The privilege is a server-side default of PostgreSQL itself, whichever client or driver version connects',
]);
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
  const jury = entry.consensus.judges === 0 ? 'no jury' : `${entry.consensus.agreed}/${entry.consensus.judges} judges agreed`;
  console.log(`  ${name}  [${entry.visibility}, ${jury}]  ${entry.claim}`);
}
const declined = readFileSync(path.join(store, 'declined.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line));
console.log(`\ndeclined (${declined.length}) are in ${path.join(store, 'declined.jsonl')}:`);
for (const row of declined) {
  const by = row.id ? `by the jury, proposal ${row.id}` : 'by the transform, no proposal made';
  console.log(`  ${row.artifact_id}  ${row.reason}${row.verdict?.failed_criterion ? ` (${row.verdict.failed_criterion})` : ''}  (${by})`);
}
const rejected = declined.find((row) => row.id);
if (rejected) console.log(`a proposal can be named by its artifact id too: npx pipeline show ${rejected.artifact_id} --history`);
console.log('\n# the pool in use: sessions say whether a lesson helped; top ranks by match × recency × hit weight');
const inUse = JSON.parse(pipeline(['pool', 'top', '--k', '5', '--json'], { show: false })).map((row) => row.id);
for (let i = 0; i < 3; i++) pipeline(['pool', 'outcome', inUse[0], 'hit', '--consumer', 'demo', '--session', `session-${i + 1}`]);
for (let i = 0; i < 5; i++) pipeline(['pool', 'outcome', inUse[1], 'miss', '--consumer', 'demo', '--session', `session-${i + 1}`], { show: i === 4 });
pipeline(['pool', 'top', '--k', '5']);
pipeline(['pool', 'prune']);
console.log(`\nthe audit log is ${path.join(store, 'events.jsonl')}`);
console.log(`look at the lifecycle with: npx pipeline --store ${shellQuote(store)} viz --out lifecycle.html`);
