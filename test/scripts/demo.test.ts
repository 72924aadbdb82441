/**
 * `npm run demo` (scripts/demo.js, README quick start, SPEC §10): the shipped pipeline end to end on
 * its offline defaults. What it prints must be true and usable: every echoed command reads back, in
 * a POSIX shell, as exactly the arguments the demo ran; counts do not lie (a rejected proposal is
 * "recorded", not "already promoted"; a private proposal had no jury, not "0/0 judges agreed"); it
 * ends with the pool in use; a declined artifact id it prints names its proposal for `show`.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers.js';

let out = '';
let status: number | null = null;

beforeAll(() => {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'demo.js')], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  out = result.stdout + result.stderr;
  status = result.status;
}, 120_000);

/** The echoed commands, `$ npx pipeline …`, as the shell text after `npx pipeline`. */
const echoed = () => [...out.matchAll(/^\$ npx pipeline (.*)$/gm)].map((match) => match[1]!);

describe('npm run demo', () => {
  it('runs the shipped pipeline end to end and exits 0', () => {
    expect(status, out).toBe(0);
    for (const stage of ['run transform', 'confirm', 'pass', 'run judge --yes', 'run promote', 'status', 'pool outcome', 'pool top', 'pool prune']) {
      expect(
        echoed().some((command) => command.startsWith(stage)),
        stage,
      ).toBe(true);
    }
    // It ends with the pool in use: the ranking, then a dry-run prune.
    const commands = echoed();
    expect(commands.at(-2)).toMatch(/^pool top/);
    expect(commands.at(-1)).toMatch(/^pool prune/);
  });

  it('echoes commands that a shell reads back as exactly the arguments it ran', () => {
    const commands = echoed();
    expect(commands.length).toBeGreaterThan(10);
    const quoted = commands.filter((command) => command.includes("'"));
    expect(quoted.length, 'the demo runs at least one argument that needs quoting').toBeGreaterThan(0);
    const shellWords = (command: string) =>
      spawnSync('sh', ['-c', `printf '%s\\0' ${command}`], { encoding: 'utf8' })
        .stdout.split('\0')
        .slice(0, -1);
    for (const command of commands) {
      const words = shellWords(command);
      // Arguments with spaces (a pass reason, a version-independence reason) come back as one word each.
      if (words[0] === 'pass') expect(words, command).toHaveLength(3);
      if (words.includes('--version-independent')) expect(words.indexOf('--version-independent'), command).toBe(words.length - 2);
      if (words[0] === 'confirm') expect(words[3], command).toMatch(/^(private|org|public)$/);
    }
    expect(commands.map(shellWords).filter((words) => words.some((word) => word.includes(' '))).length).toBeGreaterThanOrEqual(2);
  });

  it('tells the truth in its counts and labels', () => {
    expect(out).not.toMatch(/0\/0 judges agreed/);
    expect(out).toMatch(/\[private, no jury\]/);
    const promote = /^promote: (\d+) promoted, (\d+) already promoted, (\d+) recorded, (\d+) already recorded/m.exec(out);
    expect(promote, out).not.toBeNull();
    const judged = /^judge: (\d+) approved, (\d+) rejected/m.exec(out)!;
    // Run again after `run judge` promoted everything: approved ones are "already promoted", rejected ones "already recorded".
    expect(Number(promote![2])).toBe(Number(judged[1]));
    expect(Number(promote![4])).toBe(Number(judged[2]));
    expect(out).not.toMatch(/\d\.\d{6,}/); // no float noise such as 0.8200000000000001
  });

  it('names a declined proposal by its artifact id, which `show` then finds', () => {
    const hint = /npx pipeline show (\S+) --history/.exec(out);
    expect(hint, out).not.toBeNull();
    const store = /^demo store: (.*)$/m.exec(out)![1]!;
    const shown = spawnSync(process.execPath, [BIN, '--dir', ROOT, '--store', store, 'show', hint![1]!, '--history'], { encoding: 'utf8' });
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/rejected/);
  });
});
