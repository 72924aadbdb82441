/**
 * The command line in a temp directory: the review flow of issue 2 end to end, the queue commands,
 * and the conventions of SPEC §7 (exit codes, usage lines, unknown options, stdout vs stderr,
 * --json, --dir / --store) — in process through `main`; help and the version on the real binary.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyPipeline, proposalInput, ROOT, tempDir } from '../helpers.js';
import { cli, cliIn, cliStore, events, proposalFile } from './cli.js';

function input(dir: string, value: unknown = proposalInput()): string {
  const file = path.join(dir, `input-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

describe('the review flow of issue 2, end to end', () => {
  it('propose → confirm → unconfirm → confirm, pass another; status counts; one audit row per committed transition', async () => {
    const { store, env } = cliStore();
    const work = tempDir();
    const a = await cliIn(['propose', input(work)], { env });
    const b = await cliIn(['propose', '-'], { env, input: JSON.stringify(proposalInput()) });
    expect([a.code, b.code]).toEqual([0, 0]);
    const [idA, idB] = [a.stdout.trim(), b.stdout.trim()];
    expect(idA).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    expect(a.stderr).toBe('');
    const before = readFileSync(path.join(store, 'proposals', `${idA}.json`));
    expect(
      (await cliIn(['confirm', idA, '--visibility', 'public', '--version-independent', 'The lockfile format is defined by pnpm itself'], { env })).code,
    ).toBe(0);
    expect((await cliIn(['unconfirm', idA], { env })).code).toBe(0);
    expect(readFileSync(path.join(store, 'proposals', `${idA}.json`)).equals(before)).toBe(true);
    expect((await cliIn(['confirm', idA, '--visibility', 'org'], { env })).code).toBe(0);
    expect((await cliIn(['pass', idB, 'not worth sharing'], { env })).code).toBe(0);
    const status = await cliIn(['status'], { env });
    expect(status.stdout).toBe('pending 0\nconfirmed 1\npassed 1\napproved 0\nrejected 0\narchived 0\n');
    expect(events(store).map((row) => `${row['event']}:${row['from']}→${row['to']}`)).toEqual([
      'create:null→pending',
      'create:null→pending',
      'confirm:pending→confirmed',
      'unconfirm:confirmed→pending',
      'confirm:pending→confirmed',
      'pass:pending→passed',
    ]);
    for (const row of events(store)) expect(Object.keys(row)).toEqual(['at', 'id', 'event', 'from', 'to', 'stage', 'actor']);
  });
});

describe('queue commands', () => {
  it('status --json has exactly the machine states, zeros included', async () => {
    const { env } = cliStore();
    const result = await cliIn(['status', '--json'], { env });
    expect(JSON.parse(result.stdout)).toEqual({ pending: 0, confirmed: 0, passed: 0, approved: 0, rejected: 0, archived: 0 });
  });

  it('list defaults to the initial state, sorts by id, prints "<id>  <title>"; --json prints [] when empty', async () => {
    const { env } = cliStore();
    const work = tempDir();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await cliIn(['propose', input(work)], { env })).stdout.trim());
    const list = await cliIn(['list'], { env });
    expect(list.stdout.trim().split('\n')).toEqual([...ids].sort().map((id) => `${id}  pnpm 8 refuses lockfiles written by pnpm 7 until they are regenerated`));
    expect(JSON.parse((await cliIn(['list', '--state', 'approved', '--json'], { env })).stdout)).toEqual([]);
    const json = JSON.parse((await cliIn(['--json', 'list'], { env })).stdout) as { id: string }[];
    expect(json.map((proposal) => proposal.id)).toEqual([...ids].sort());
  });

  it('refuses an unknown --state with exit 1, naming the states', async () => {
    const { env } = cliStore();
    const result = await cliIn(['list', '--state', 'limbo'], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown state "limbo" \(expected pending, confirmed, passed, approved, rejected, archived or all\)/);
    expect(result.stdout).toBe('');
  });

  it('show prints the proposal; --json the proposal object', async () => {
    const { env } = cliStore();
    const id = (await cliIn(['propose', input(tempDir())], { env })).stdout.trim();
    expect(JSON.parse((await cliIn(['show', id, '--json'], { env })).stdout)).toMatchObject({ id, status: 'pending' });
    expect((await cliIn(['show', id], { env })).stdout).toMatch(new RegExp(`id: ${id}`));
  });

  it('refuses a malformed id with "invalid id" and an unknown one with "not found"', async () => {
    const { env } = cliStore();
    for (const command of [['show'], ['confirm'], ['promote'], ['unconfirm']]) {
      const bad = await cliIn([...command, '../../etc/passwd', ...(command[0] === 'confirm' ? ['--visibility', 'org'] : [])], { env });
      expect([bad.code, bad.stderr]).toEqual([1, expect.stringMatching(/invalid id/)]);
      const missing = await cliIn([...command, '01ARZ3NDEKTSV4RRFFQ69G5FAV', ...(command[0] === 'confirm' ? ['--visibility', 'org'] : [])], { env });
      expect([missing.code, missing.stderr]).toEqual([1, expect.stringMatching(/not found/)]);
    }
  });

  it('propose refuses a candidate that fails the schema, and an artifact already handled', async () => {
    const { env } = cliStore();
    const work = tempDir();
    const bad = proposalInput({ applies_to: { stack: ['pnpm'], scope: { kind: 'versioned', versions: { pnpm: '^8' } }, file_patterns: [], task_kinds: [] } });
    const refused = await cliIn(['propose', input(work, bad)], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/fails the candidate schema[\s\S]*version range/);
    const value = proposalInput();
    expect((await cliIn(['propose', input(work, value)], { env })).code).toBe(0);
    const again = await cliIn(['propose', input(work, value)], { env });
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/already proposed/)]);
    const notJson = await cliIn(['propose', '-'], { env, input: '{nope' });
    expect([notJson.code, notJson.stderr]).toEqual([1, expect.stringMatching(/not valid JSON/)]);
  });

  it('prints one line per successful review command, the proposal object with --json', async () => {
    const { env } = cliStore();
    const id = (await cliIn(['propose', input(tempDir())], { env })).stdout.trim();
    const confirmed = await cliIn(['confirm', id, '--visibility', 'org'], { env });
    expect(confirmed.stdout).toBe(`${id} pending → confirmed\n`);
    const repeat = await cliIn(['confirm', id, '--visibility', 'org', '--json'], { env });
    expect(JSON.parse(repeat.stdout)).toMatchObject({ id, status: 'confirmed', visibility: 'org' });
  });
});

describe('command-line conventions', () => {
  it('refuses an unknown option by name, never reading it as a value or a positional', async () => {
    const { store, env } = cliStore();
    const id = (await cliIn(['propose', input(tempDir())], { env })).stdout.trim();
    const asValue = await cliIn(['confirm', id, '--visibility', '--bogus'], { env });
    expect([asValue.code, asValue.stderr]).toEqual([1, expect.stringMatching(/unknown option: --bogus/)]);
    const asPositional = await cliIn(['unconfirm', '--cwd', id], { env });
    expect([asPositional.code, asPositional.stderr]).toEqual([1, expect.stringMatching(/unknown option: --cwd/)]);
    expect(asPositional.stderr).toMatch(/usage: pipeline unconfirm <id>/);
    const onList = await cliIn(['list', '--confirmed'], { env });
    expect([onList.code, onList.stderr]).toEqual([1, expect.stringMatching(/unknown option: --confirmed/)]);
    for (const name of ['--constructor', '--toString', '--__proto__']) {
      const inherited = await cliIn(['status', name], { env });
      expect([inherited.code, inherited.stderr]).toEqual([1, expect.stringMatching(new RegExp(`unknown option: ${name}`))]);
    }
    expect(proposalFile(store, id).status).toBe('pending');
  });

  it('prints a usage line naming the command on a usage error', async () => {
    const { env } = cliStore();
    const missing = await cliIn(['show'], { env });
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringMatching(/usage: pipeline show <id>/)]);
    const extra = await cliIn(['status', 'now'], { env });
    expect([extra.code, extra.stderr]).toEqual([1, expect.stringMatching(/usage: pipeline status/)]);
    const noValue = await cliIn(['list', '--state'], { env });
    expect([noValue.code, noValue.stderr]).toEqual([1, expect.stringMatching(/--state needs a value[\s\S]*usage: pipeline list/)]);
    const limit = await cliIn(['run', 'judge', '--limit', '0'], { env });
    expect([limit.code, limit.stderr]).toEqual([1, expect.stringMatching(/--limit must be a whole number[\s\S]*usage: pipeline run/)]);
    const unknown = await cliIn(['stauts'], { env });
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/unknown command: stauts[\s\S]*did you mean "status"/)]);
  });

  it('says which global option lacks its value, and prints the usage line when no command is given', async () => {
    const { env } = cliStore();
    const usage = 'usage: pipeline [--dir DIR] [--store DIR] [--json] <command> [options]   (`pipeline help` lists the commands)\n';
    const noStore = await cliIn(['--store'], { env });
    expect([noStore.code, noStore.stderr]).toEqual([1, `error: --store needs a value\n${usage}`]);
    const noCommand = await cliIn(['--dir', ROOT], { env });
    expect([noCommand.code, noCommand.stderr]).toEqual([1, `error: no command given\n${usage}`]);
    const unknown = await cliIn(['--bogus'], { env });
    expect([unknown.code, unknown.stderr]).toEqual([1, `error: unknown option: --bogus\n${usage}`]);
  });

  it('refuses a single-valued option given twice, writing nothing; a repeatable one may repeat', async () => {
    const { store, env } = cliStore();
    const id = (await cliIn(['propose', input(tempDir())], { env })).stdout.trim();
    const twice = await cliIn(['confirm', id, '--visibility', 'org', '--visibility=public'], { env });
    expect([twice.code, twice.stdout]).toEqual([1, '']);
    expect(twice.stderr).toBe(
      'error: --visibility is given twice ("org", then "public"); it takes one value\nusage: pipeline confirm <id> --visibility private|org|public [--version-independent TEXT]\n',
    );
    expect(proposalFile(store, id).status).toBe('pending');
    const state = await cliIn(['list', '--state', 'pending', '--state', 'confirmed'], { env });
    expect([state.code, state.stdout, state.stderr]).toEqual([1, '', expect.stringMatching(/^error: --state is given twice \("pending", then "confirmed"\)/)]);
    const global = await cliIn(['--store', store, 'status', '--store', tempDir()], { env });
    expect([global.code, global.stderr]).toEqual([1, expect.stringMatching(/^error: --store is given twice/)]);
    const where = await cliIn(['list', '--where', 'status=pending', '--where', 'artifact_id=nothing'], { env });
    expect([where.code, where.stdout]).toEqual([0, '']);
  });

  it('refuses viz --out with an empty file name', async () => {
    const { env } = cliStore();
    const viz = await cliIn(['viz', '--out', ''], { env });
    expect([viz.code, viz.stdout]).toEqual([1, '']);
    expect(viz.stderr).toBe(
      'error: --out needs a file name, got an empty one\nusage: pipeline viz [--format html|svg|dot|mermaid|json] [--out FILE] [--serve [--port N]]\n',
    );
  });

  it.each([
    [['--store', '', 'status'], '--store needs a directory, got an empty one'],
    [['status', '--store='], '--store needs a directory, got an empty one'],
    [['--dir', '', 'status'], '--dir needs a directory, got an empty one'],
    [['run', 'transform', '--source', ''], '--source needs a directory, got an empty one'],
    [['judge', '01ARZ3NDEKTSV4RRFFQ69G5FAV', '--verdicts', ''], '--verdicts needs a file name, got an empty one'],
  ])('refuses an empty path, which would quietly mean the working directory: %j', async (args, message) => {
    const { store, env } = cliStore();
    const result = await cliIn(args, { env });
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n')[0]).toBe(`error: ${message}`);
    expect(existsSync(path.join(process.cwd(), '.pipeline'))).toBe(false);
    expect(existsSync(path.join(store, 'proposals'))).toBe(false);
  });

  it('accepts global options before or after the command', async () => {
    const { store, env } = cliStore();
    const other = path.join(tempDir(), 'other-store');
    await cliIn(['--store', other, 'propose', input(tempDir())], { env });
    await cliIn(['propose', input(tempDir()), '--store', other], { env });
    expect(JSON.parse((await cliIn(['status', '--json', '--store', other], { env })).stdout).pending).toBe(2);
    expect(existsSync(store)).toBe(false);
  });

  it('finds the nearest pipeline.yaml above the working directory, or takes --dir', async () => {
    const { env } = cliStore();
    const copy = copyPipeline();
    const deep = path.join(copy, 'a', 'b');
    mkdirSync(deep, { recursive: true });
    expect((await cliIn(['status'], { cwd: deep, env })).code).toBe(0);
    const nowhere = tempDir();
    const lost = await cliIn(['status'], { cwd: nowhere, env });
    expect([lost.code, lost.stderr]).toEqual([1, expect.stringMatching(/no pipeline\.yaml/)]);
    expect((await cliIn(['--dir', copy, 'status'], { cwd: nowhere, env })).code).toBe(0);
  });

  it('defaults the store to .pipeline beside pipeline.yaml; PIPELINE_STORE and then --store override it', async () => {
    const copy = copyPipeline();
    const { env } = cliStore();
    const { PIPELINE_STORE: _ignored, ...noStore } = env;
    void _ignored;
    await cliIn(['propose', input(tempDir())], { cwd: copy, env: { ...noStore, PIPELINE_STORE: undefined } });
    expect(existsSync(path.join(copy, '.pipeline', 'proposals'))).toBe(true);
    const viaEnv = path.join(tempDir(), 's');
    await cliIn(['propose', input(tempDir())], { cwd: copy, env: { ...noStore, PIPELINE_STORE: viaEnv } });
    expect(existsSync(path.join(viaEnv, 'proposals'))).toBe(true);
  });

  it('keeps stdout for results: --json output parses and carries no prose, messages go to stderr', async () => {
    const { env } = cliStore();
    const refused = await cliIn(['confirm', '01ARZ3NDEKTSV4RRFFQ69G5FAV', '--visibility', 'org', '--json'], { env });
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/not found/);
    const status = await cliIn(['status', '--json'], { env });
    expect(() => JSON.parse(status.stdout)).not.toThrow();
  });

  it('refuses every command on an invalid configuration before anything is written', async () => {
    const copy = copyPipeline();
    const rubric = path.join(copy, 'rubrics', 'lesson-promotion-public.yaml');
    writeFileSync(rubric, readFileSync(rubric, 'utf8').replace('weight: 0.24', 'weight: 0.25'));
    const { store, env } = cliStore();
    const result = await cliIn(['propose', input(tempDir())], { cwd: copy, env });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /rubrics\/lesson-promotion-public\.yaml:\d+:1: criterion weights sum to 1\.01, expected 1\.00 \(0\.32 \+ 0\.25 \+ 0\.14 \+ 0\.30\)/,
    );
    expect(existsSync(store)).toBe(false);
    const validate = await cliIn(['validate'], { cwd: copy, env });
    expect(validate.code).toBe(1);
    expect((await cliIn(['validate'], { cwd: ROOT, env })).stdout).toMatch(/^ok lesson-promotion/);
  });

  it('prints help and the version', async () => {
    expect(cli(['--help']).stdout).toMatch(/usage: pipeline \[--dir DIR\][\s\S]*confirm/);
    expect(cli(['help', 'confirm']).stdout).toMatch(/usage: pipeline confirm <id> --visibility private\|org\|public \[--version-independent TEXT\]/);
    expect(cli(['--version']).stdout).toMatch(/^pipeline \d+\.\d+\.\d+/);
  });
});
