/**
 * Batch runs through the command line, in process (one run and Ctrl-C on the real binary): the
 * judge run of issue 3 (summary, files and audit log agree), paid-provider confirmation, dry
 * runs, externally produced verdicts, model providers as real processes, Ctrl-C, init, and
 * `pipeline run` over every automatic stage.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, openSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findReviewCommand, runReviewCommand } from '../../engine/stages/review.js';
import { MAX_INPUT_BYTES } from '../../engine/cli/read-input.js';
import { BIN, copyPipeline, proposalInput, ROOT, tempDir, testEngine } from '../helpers.js';
import { cli, cliIn, cliSpawn, cliStore, events, proposalFile } from './cli.js';

/**
 * Set-up through the engine API over the store `env` names: one pending proposal per entry of
 * `visibilities`, confirmed at it unless it is null. What is tested goes through the command line.
 */
async function confirmed(env: Record<string, string>, visibilities: (string | null)[], dir = ROOT): Promise<string[]> {
  const { engine, pipeline } = await testEngine({ dir, storeDir: env['PIPELINE_STORE']!, clock: () => new Date() });
  const ids: string[] = [];
  for (const visibility of visibilities) {
    const created = await engine.propose(proposalInput(), { stage: 'test', actor: 'cli' });
    if (created.kind !== 'committed') throw new Error(JSON.stringify(created));
    if (visibility !== null) {
      const outcome = await runReviewCommand(engine, findReviewCommand(pipeline, 'confirm')!, created.id, { visibility }, 'cli');
      if (outcome.kind !== 'committed') throw new Error(JSON.stringify(outcome));
    }
    ids.push(created.id);
  }
  return ids;
}

/** A pipeline copy whose judges (and optionally transformer) are a program: a stand-in for `claude -p`. */
function withCommandJudge(script: string, options: { paid?: boolean } = {}): { dir: string; marker: string } {
  const dir = copyPipeline();
  const marker = path.join(dir, 'calls.log');
  const program = path.join(dir, 'judge.mjs');
  writeFileSync(
    program,
    `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(marker)}, (process.env.PIPELINE_JUDGE_TYPE ?? '-') + ' ' + (process.env.PIPELINE_PROPOSAL_ID ?? '-') + '\\n');\n${script}`,
  );
  const yaml = path.join(dir, 'pipeline.yaml');
  writeFileSync(
    yaml,
    readFileSync(yaml, 'utf8').replace(
      '    command: claude -p',
      `    command: ${process.execPath} ${program}${options.paid === false ? '\n    paid: false' : ''}\n    attempts: 1`,
    ),
  );
  const judge = path.join(dir, 'stages', 'judge.yaml');
  writeFileSync(
    judge,
    readFileSync(judge, 'utf8').replace('standard: standard-checks', 'standard: claude').replace('adversarial: adversarial-checks', 'adversarial: claude'),
  );
  return { dir, marker };
}

const GOOD = `const scores = { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 0.95 };
let prompt = ''; process.stdin.on('data', (d) => prompt += d); process.stdin.on('end', () => {
  process.stdout.write('My verdict:\\n' + JSON.stringify({ score: 0.9, passed: true, criterion_scores: scores, feedback_summary: 'ok' }));
});`;

describe('run judge (issue 3, end to end)', () => {
  it('judges 20 proposals at mixed visibilities; the summary, the files and events.jsonl agree', async () => {
    const { store, env } = cliStore();
    const visibilities = ['private', 'org', 'public'];
    const ids = await confirmed(
      env,
      Array.from({ length: 20 }, (_, index) => visibilities[index % 3]!),
    );
    const result = cli(['run', 'judge', '--yes', '--json'], { env });
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(Object.keys(summary)).toEqual(['stage', 'counts', 'unjudged', 'refused', 'tokens']);
    expect(summary).toMatchObject({ stage: 'judge', unjudged: [], refused: [], tokens: { tokens_in: null, tokens_out: null } });
    expect(summary.counts.approved + summary.counts.rejected).toBe(20);
    const statuses = ids.map((id) => proposalFile(store, id).status);
    expect(statuses.filter((status) => status === 'approved')).toHaveLength(summary.counts.approved);
    const judged = events(store).filter((row) => row['event'] === 'approve' || row['event'] === 'reject');
    expect(judged).toHaveLength(20);
    expect(new Set(judged.map((row) => row['id'])).size).toBe(20);
    for (const row of judged) expect(proposalFile(store, String(row['id'])).status).toBe(row['to']);
    // the shipped pipeline promotes at once
    expect(readdirSync(path.join(store, 'approved'))).toHaveLength(summary.counts.approved);
    expect(ids.every((id) => proposalFile(store, id).promoted_at)).toBe(true);
    expect((await cliIn(['status'], { env })).stdout).toBe(
      `pending 0\nconfirmed 0\npassed 0\napproved ${summary.counts.approved}\nrejected ${summary.counts.rejected}\narchived 0\n`,
    );
  });

  it('exits 2 and lists the ids it could not judge, writing nothing for them', async () => {
    const { dir } = withCommandJudge(`process.stdout.write('no idea');`, { paid: false });
    const { store, env } = cliStore();
    const [id] = await confirmed(env, ['org'], dir);
    const before = readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8');
    const result = await cliIn(['--dir', dir, 'run', 'judge'], { env });
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(new RegExp(`could not be judged \\(left as they are; run again to retry\\): ${id}`));
    expect(result.stderr).toMatch(/could not be judged: .*not JSON/);
    expect(readFileSync(path.join(store, 'proposals', `${id}.json`), 'utf8')).toBe(before);
  });
});

describe('paid providers', () => {
  it('refuses without a terminal and without --yes, stating the batch, and writes nothing', async () => {
    const { dir, marker } = withCommandJudge(GOOD);
    const { store, env } = cliStore();
    await confirmed(env, ['private', 'org', 'public'], dir);
    const before = readdirSync(path.join(store, 'proposals')).map((name) => readFileSync(path.join(store, 'proposals', name), 'utf8'));
    const log = readFileSync(path.join(store, 'events.jsonl'));
    const result = await cliIn(['--dir', dir, 'run', 'judge'], { env });
    expect(result.code).toBe(1);
    expect(readFileSync(path.join(store, 'events.jsonl')).equals(log)).toBe(true);
    expect(result.stderr).toMatch(/judge: 3 proposals \(1 no jury \(private_no_jury\), 1 lesson-promotion, 1 lesson-promotion-public\)/);
    expect(result.stderr).toMatch(/4 model calls, 4 to paid providers \(claude\)/);
    expect(result.stderr).toMatch(/pass --yes/);
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(path.join(store, 'proposals')).map((name) => readFileSync(path.join(store, 'proposals', name), 'utf8'))).toEqual(before);
  });

  it.each([
    ['Ctrl-D', 0, '\u0004'],
    ['Ctrl-C', 130, '\u0003'],
  ])('on a terminal, %s at the spend question is no: nothing called or written, never an internal error, exit %i', async (_key, code, key) => {
    const { dir, marker } = withCommandJudge(GOOD);
    const { store, env } = cliStore();
    await confirmed(env, ['org'], dir);
    const log = readFileSync(path.join(store, 'events.jsonl'));
    // util-linux `script` gives the binary a pseudo-terminal; the key goes once the question is on it.
    const command = [process.execPath, BIN, '--dir', dir, 'run', 'judge'].map((part) => JSON.stringify(part)).join(' ');
    const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env, TERM: 'xterm' }, stdio: 'pipe' });
    let screen = '';
    let asked = false;
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
      // (readline may end the question with a cursor move.)
      if (!asked && /\[y\/N\] (\u001b\[[0-9;]*[A-Za-z])*$/.test(screen)) {
        asked = true;
        child.stdin.write(key);
      }
    });
    // Never hang the suite on a question that does not end (the test then fails on its exit code).
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const exit = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(guard);
    expect([exit, asked], screen).toEqual([code, true]);
    expect(screen).toContain('cancelled: nothing was called and nothing was written');
    expect(screen).not.toMatch(/internal error/);
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(path.join(store, 'events.jsonl')).equals(log)).toBe(true);
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    const { dir, marker } = withCommandJudge(GOOD);
    const { env } = cliStore();
    const [id] = await confirmed(env, ['public'], dir);
    const result = await cliIn(['--dir', dir, 'run', 'judge', '--dry-run'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/2 model calls, 2 to paid providers[\s\S]*dry run: nothing was called and nothing was written/);
    expect(existsSync(marker)).toBe(false);
    expect((await cliIn(['--dir', dir, 'list', '--state', 'confirmed'], { env })).stdout).toMatch(id!);
  });

  it('with --yes calls the program once per seat, with the stage, judge type and proposal in its environment', async () => {
    const { dir, marker } = withCommandJudge(GOOD);
    const { store, env } = cliStore();
    const [id] = await confirmed(env, ['public'], dir);
    const result = await cliIn(['--dir', dir, 'run', 'judge', '--yes'], { env });
    expect(result.code).toBe(0);
    expect(readFileSync(marker, 'utf8').trim().split('\n').sort()).toEqual([`adversarial ${id}`, `standard ${id}`]);
    expect(proposalFile(store, id!).verdict).toMatchObject({ rubric_id: 'lesson-promotion-public', passed: true });
    // a re-run pays for nothing twice: both answers are cached
    await cliIn(['--dir', dir, 'unconfirm', id!], { env });
    expect(readFileSync(marker, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('asks nothing for a batch with no paid call', async () => {
    const { env } = cliStore();
    await confirmed(env, ['org']);
    const result = await cliIn(['run', 'judge'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/paid/);
  });
});

describe('judge <id> --verdicts', () => {
  const verdicts = (adversarialPasses: boolean) =>
    JSON.stringify(
      ['standard', 'adversarial'].map((judge_type) => ({
        judge_type,
        score: 0.9,
        passed: judge_type === 'standard' || adversarialPasses,
        criterion_scores: { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9 },
      })),
    );

  it('records verdicts from a file or stdin through the same gate (0), refuses (1), or leaves unjudged (2)', async () => {
    const { store, env } = cliStore();
    const [a, b, c] = await confirmed(env, ['org', 'org', 'org']);
    const file = path.join(tempDir(), 'verdicts.json');
    writeFileSync(file, verdicts(true));
    const approved = await cliIn(['judge', a!, '--verdicts', file], { env });
    expect([approved.code, approved.stdout]).toEqual([0, expect.stringMatching(new RegExp(`${a} confirmed → approved \\(gate_passed`))]);
    const rejected = await cliIn(['judge', b!, '--verdicts', '-'], { env, input: verdicts(false) });
    expect([rejected.code, proposalFile(store, b!).verdict.reason]).toEqual([0, 'jury_not_majority']);
    const again = await cliIn(['judge', a!, '--verdicts', file], { env });
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(new RegExp(`${a} is approved`))]);
    const unreadable = await cliIn(['judge', c!, '--verdicts', path.join(tempDir(), 'missing.json')], { env });
    expect([unreadable.code, unreadable.stderr]).toEqual([
      1,
      expect.stringMatching(
        new RegExp(`^refused: ${c} \\(confirmed\\): cannot read --verdicts input from .*missing\\.json: no such file.*; nothing was written\n$`),
      ),
    ]);
    for (const bad of ['not json', '{"judge_type": "standard"}', '["standard", "adversarial"]', '[]']) {
      const unjudged = await cliIn(['judge', c!, '--verdicts', '-'], { env, input: bad });
      expect([unjudged.code, unjudged.stderr]).toEqual([2, expect.stringMatching(/could not be judged/)]);
      expect(proposalFile(store, c!).status).toBe('confirmed');
    }
  });
});

describe('input from outside is bounded in size (SPEC §12)', () => {
  const cap = `${MAX_INPUT_BYTES / (1024 * 1024)} MiB`;

  it('refuses --verdicts input over the cap from a file, an endless device or an endless stdin, and stops reading there', async () => {
    const { store, env } = cliStore();
    const [id] = await confirmed(env, ['org']);
    const file = path.join(tempDir(), 'verdicts.json');
    writeFileSync(file, `[]${' '.repeat(MAX_INPUT_BYTES)}`);
    const big = await cliIn(['judge', id!, '--verdicts', file], { env });
    expect([big.code, big.stderr]).toEqual([
      1,
      `refused: ${id} (confirmed): --verdicts input is larger than ${cap} (${file}); stopped reading there; nothing was written\n`,
    ]);
    const device = await cliIn(['judge', id!, '--verdicts', '/dev/zero'], { env });
    expect([device.code, device.stderr]).toEqual([
      1,
      `refused: ${id} (confirmed): --verdicts input is larger than ${cap} (/dev/zero); stopped reading there; nothing was written\n`,
    ]);
    // The real binary with /dev/zero on stdin: it ends by itself, not by running out of memory.
    const zero = openSync('/dev/zero', 'r');
    const child = spawn(process.execPath, [BIN, 'judge', id!, '--verdicts', '-'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: [zero, 'pipe', 'pipe'],
    });
    closeSync(zero);
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect([code, stderr]).toEqual([
      1,
      `refused: ${id} (confirmed): --verdicts input is larger than ${cap} (stdin); stopped reading there; nothing was written\n`,
    ]);
    expect(proposalFile(store, id!).status).toBe('confirmed');
  });

  it('refuses a proposal over the cap on stdin, and takes one of exactly the cap', async () => {
    const { env } = cliStore();
    const text = JSON.stringify(proposalInput());
    const over = await cliIn(['propose', '-'], { env, input: text.padEnd(MAX_INPUT_BYTES + 1) });
    expect([over.code, over.stdout, over.stderr]).toEqual([1, '', `refused: the proposal is larger than ${cap} (stdin); stopped reading there\n`]);
    const exact = await cliIn(['propose', '-'], { env, input: text.padEnd(MAX_INPUT_BYTES) });
    expect([exact.code, exact.stdout]).toEqual([0, expect.stringMatching(/^[0-9A-Z]{26}\n$/)]);
  });
});

describe('a review never calls a model', () => {
  it('confirms, unconfirms and judges a private proposal with a failing `claude` first on PATH', async () => {
    const bin = tempDir();
    const marker = path.join(bin, 'claude-was-called');
    writeFileSync(path.join(bin, 'claude'), `#!/bin/sh\ntouch ${marker}\necho "claude was invoked but this path must spend no tokens" >&2\nexit 99\n`);
    chmodSync(path.join(bin, 'claude'), 0o755);
    const { env } = cliStore();
    const withStub = { ...env, PATH: `${bin}:${process.env['PATH']}` };
    const [id] = await confirmed(withStub, [null]);
    expect(
      (await cliIn(['confirm', id!, '--visibility', 'public', '--version-independent', 'The lockfile format is defined by pnpm itself'], { env: withStub }))
        .code,
    ).toBe(0);
    expect((await cliIn(['unconfirm', id!], { env: withStub })).code).toBe(0);
    expect((await cliIn(['confirm', id!, '--visibility', 'private'], { env: withStub })).code).toBe(0);
    expect((await cliIn(['run', 'judge'], { env: withStub })).code).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it('run review without a terminal exits 1 and names the single commands', async () => {
    const { env } = cliStore();
    const result = await cliIn(['run', 'review'], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /there is none; use the single commands:[\s\S]*pipeline confirm <id> --visibility private\|org\|public[\s\S]*pipeline pass <id> \[REASON\][\s\S]*pipeline defer <id>[\s\S]*pipeline unconfirm <id>/,
    );
  });
});

describe('the transform with a model provider', () => {
  it('with the provider missing writes nothing anywhere, and the next run with a working provider proposes it', async () => {
    const dir = copyPipeline();
    const source = tempDir();
    const artifact = JSON.parse(readFileSync(path.join(ROOT, 'examples', 'artifacts', 'a001.json'), 'utf8'));
    writeFileSync(path.join(source, 'a001.json'), JSON.stringify(artifact));
    const yaml = path.join(dir, 'pipeline.yaml');
    writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('    command: claude -p', '    command: /nonexistent/claude-for-tests -p\n    paid: false'));
    const stage = path.join(dir, 'stages', 'transform.yaml');
    writeFileSync(stage, readFileSync(stage, 'utf8').replace(/^provider: mapper$/m, 'provider: claude'));
    const { store, env } = cliStore();
    const first = await cliIn(['--dir', dir, 'run', 'transform', '--source', source], { env });
    expect(first.code).toBe(2);
    expect(first.stderr).toMatch(/left untouched \(retried next run\)/);
    expect(existsSync(store) ? readdirSync(store).filter((name) => !name.startsWith('.')) : []).toEqual([]);
    writeFileSync(stage, readFileSync(stage, 'utf8').replace(/^provider: claude$/m, 'provider: mapper'));
    const second = await cliIn(['--dir', dir, 'run', 'transform', '--source', source], { env });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/transform: 1 proposed/);
  });
});

describe('Ctrl-C', () => {
  it('stops claiming, drops in-flight calls unwritten, and exits 130', async () => {
    const { dir, marker } = withCommandJudge(`setTimeout(() => process.stdout.write('{}'), 30000);`, { paid: false });
    const { store, env } = cliStore();
    const ids = await confirmed(env, ['org', 'org', 'org', 'org'], dir);
    const child = cliSpawn(['--dir', dir, 'run', 'judge', '--concurrency', '2'], { env });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    for (let i = 0; i < 200 && !existsSync(marker); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGINT');
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(/interrupted/);
    for (const id of ids) expect(proposalFile(store, id).status).toBe('confirmed');
    expect(readdirSync(path.join(store, '.claims', 'judge'))).toEqual([]);
  });
});

describe('pipeline run and pipeline init', () => {
  it('run with no stage runs transform → judge → promote; init scaffolds a working copy and refuses a non-empty directory', async () => {
    const target = path.join(tempDir(), 'lessons');
    const init = await cliIn(['init', target]);
    expect(init.code).toBe(0);
    expect(readdirSync(target).sort()).toEqual(['.gitignore', 'examples', 'machines', 'pipeline.yaml', 'rubrics', 'schemas', 'stages']);
    // the store is data: kept out of version control from the start
    expect(readFileSync(path.join(target, '.gitignore'), 'utf8')).toMatch(/^\/\.pipeline\/$/m);
    expect((await cliIn(['init', target])).code).toBe(1);
    const file = path.join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    const onFile = await cliIn(['init', file]);
    expect([onFile.code, onFile.stderr]).toEqual([1, expect.stringMatching(/is a file/)]);
    // A link to nothing, and a FIFO: said as such, never an internal error.
    const dangling = path.join(tempDir(), 'dangling');
    symlinkSync(path.join(tempDir(), 'gone'), dangling);
    const onDangling = await cliIn(['init', dangling]);
    expect([onDangling.code, onDangling.stderr]).toEqual([
      1,
      expect.stringMatching(/is a symbolic link to nothing; init writes into a new or empty directory/),
    ]);
    const fifo = path.join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    const onFifo = await cliIn(['init', fifo]);
    expect([onFifo.code, onFifo.stderr]).toEqual([1, expect.stringMatching(/is a FIFO; init writes/)]);
    const { env } = cliStore();
    expect((await cliIn(['validate'], { cwd: target, env })).code).toBe(0);
    const run = await cliIn(['run', '--json'], { cwd: target, env });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).map((summary: { stage: string }) => summary.stage)).toEqual(['transform', 'judge', 'promote']);
    expect((await cliIn(['status', '--json'], { cwd: target, env })).stdout).toMatch(/"pending": 7/);
  });
});
