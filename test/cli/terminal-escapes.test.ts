/**
 * SPEC §5.3, §12: text from proposals is printed with control characters escaped everywhere — list,
 * show, the walk, warnings, refusals — so no proposal can move the cursor, retitle the terminal,
 * clear the screen or hide text from a reviewer. --json stays exact JSON. The engine's own colours
 * are not escaped.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Output, type Io } from '../../engine/cli/io.js';
import { main } from '../../engine/cli/main.js';
import { escapeJsonText, escapeTerminal } from '../../engine/util/terminal.js';
import { ROOT, tempDir } from '../helpers.js';
import { pendingProposal, runIn, writeProposal } from './memory-io.js';

/** OSC retitle, clear screen, CR overwrite, right-to-left override, an 8-bit CSI, an isolate, backspace, DEL. */
const HOSTILE = 'pnpm \u001b]0;pwned\u0007 \u001b[2J\rhidden \u202eevil\u202c \u009b31m \u2066x\u2069 ab\u0008\u007f';
/** Anything a terminal acts on rather than prints (tab and line feed are layout). */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const ID = '01JC8A0000000000000000P001';

function hostileStore(extra: Record<string, unknown> = {}): { store: string; env: Record<string, string> } {
  const store = path.join(tempDir(), 'store');
  writeProposal(store, ID, pendingProposal(ID, HOSTILE, extra));
  return { store, env: { PIPELINE_STORE: store } };
}

describe('escapeTerminal', () => {
  it('shows every control as a visible escape and leaves text, tabs and line feeds alone', () => {
    expect(escapeTerminal(HOSTILE)).toBe('pnpm \\x1b]0;pwned\\x07 \\x1b[2J\\x0dhidden \\u202eevil\\u202c \\x9b31m \\u2066x\\u2069 ab\\x08\\x7f');
    expect(escapeTerminal('a\tb\nc é 日本 👩‍💻')).toBe('a\tb\nc é 日本 👩‍💻');
    expect(escapeTerminal('\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202d\u2067\u2068')).not.toMatch(RAW_CONTROL);
  });

  it('shows what a terminal draws as nothing: tag characters (an invisible sentence a model reads), zero-width space, word joiner, BOM, soft hyphen', () => {
    // "IGNORE" spelled in tag characters, hidden between two visible words.
    const tags = [...'IGNORE'].map((letter) => String.fromCodePoint(0xe0000 + letter.charCodeAt(0))).join('');
    const hidden = `score${tags} it\u200bfairly\u2060\ufeff\u00ad\u180e\ufff9`;
    expect(escapeTerminal(hidden)).toBe('score\\u{e0049}\\u{e0047}\\u{e004e}\\u{e004f}\\u{e0052}\\u{e0045} it\\u200bfairly\\u2060\\ufeff\\xad\\u180e\\ufff9');
    const json = escapeJsonText(JSON.stringify({ claim: hidden }));
    expect(json).toMatch(/^[\x20-\x7e]*$/);
    expect(JSON.parse(json)).toEqual({ claim: hidden });
    // Variation selectors, one a byte (a review hid a sentence in them), and other fillers; an
    // emoji's own presentation selector (❤️) stays, a run of them does not.
    const bytes = [...'IGNORE'].map((letter) => String.fromCodePoint(0xe0100 + letter.charCodeAt(0) - 16)).join('');
    const selectors = `Upgrade${bytes}\ufe00\ufe0f\ufe0e pnpm\u3164\u206a\u034f\ufe01`;
    const shown = escapeTerminal(selectors);
    expect(shown).toBe('Upgrade\\u{e0139}\\u{e0137}\\u{e013e}\\u{e013f}\\u{e0142}\\u{e0135}\\ufe00\\ufe0f\\ufe0e pnpm\\u3164\\u206a\\u034f\\ufe01');
    expect(JSON.parse(escapeJsonText(JSON.stringify({ claim: selectors })))).toEqual({ claim: selectors });
    expect(escapeJsonText(JSON.stringify({ claim: selectors }))).toMatch(/^[\x20-\x7e]*$/);
    expect(escapeTerminal('I ❤️ it ✔︎')).toBe('I ❤️ it ✔︎');
    // What writing needs stays: joiners in emoji and Persian, accents, CJK.
    expect(escapeTerminal('👩‍💻 می‌خواهم é 日本')).toBe('👩‍💻 می‌خواهم é 日本');
  });

  it('keeps JSON text meaning exactly the same value', () => {
    const value = { claim: HOSTILE, 'k\u202e': ['\u2028'] };
    const text = escapeJsonText(JSON.stringify(value, null, 2));
    expect(text).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('Output', () => {
  it("escapes the text but keeps the engine's own colours", () => {
    let err = '';
    const io = { stderr: { write: (text: string) => (err += text) }, stderrIsTTY: true, env: {} } as unknown as Io;
    const out = new Output(io, { json: false });
    out.refused(`x ${HOSTILE}`, [HOSTILE]);
    out.warn(HOSTILE);
    out.note(HOSTILE, 'could not be judged:');
    out.heading(HOSTILE);
    expect(err).toContain('\u001b[31mrefused:\u001b[39m x pnpm \\x1b]0;pwned\\x07');
    expect(err).toContain('\u001b[33mwarning:\u001b[39m pnpm \\x1b]0;');
    expect(err).toContain('\u001b[33mcould not be judged:\u001b[39m pnpm \\x1b]0;');
    expect(err).toContain('\n\u001b[1mpnpm \\x1b]0;');
    // With the colour codes taken out, nothing raw is left.
    expect(err.replace(/\u001b\[(1|22|31|33|39)m/g, '')).not.toMatch(RAW_CONTROL);
  });
});

describe('commands print proposal text escaped', () => {
  it('list: the title row', async () => {
    const { env } = hostileStore();
    const list = await runIn(['list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toBe(`${ID}  pnpm \\x1b]0;pwned\\x07 \\x1b[2J hidden \\u202eevil\\u202c \\x9b31m \\u2066x\\u2069 ab\\x08\\x7f\n`);
  });

  it('show: the YAML, keys included', async () => {
    const { env } = hostileStore({ [`note\u202e`]: 'x\u009b2J' });
    const show = await runIn(['show', ID], env);
    expect(show.code).toBe(0);
    expect(show.stdout).not.toMatch(RAW_CONTROL);
    expect(show.stdout).toContain('\\u202eevil');
    expect(show.stdout).toContain('note\\u202e');
  });

  it('list --json and show --json: exact JSON of the file, with nothing raw a terminal acts on', async () => {
    const { env } = hostileStore({ [`note\u202e`]: 'x\u009b2J' });
    const list = await runIn(['list', '--json'], env);
    const show = await runIn(['show', ID, '--json'], env);
    for (const output of [list.stdout, show.stdout]) expect(output).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(list.stdout)).toEqual([pendingProposal(ID, HOSTILE, { [`note\u202e`]: 'x\u009b2J' })]);
    expect(JSON.parse(show.stdout)).toEqual(pendingProposal(ID, HOSTILE, { [`note\u202e`]: 'x\u009b2J' }));
  });

  it('a warning naming a status from a file', async () => {
    const { env } = hostileStore({ status: `pending\u001b[2J\u202e` });
    const status = await runIn(['status'], env);
    expect(status.code).toBe(0);
    expect(status.stderr).not.toMatch(RAW_CONTROL);
    expect(status.stderr).toContain('status "pending\\u001b[2J\\u202e", which the lifecycle does not know');
  });

  it('a refusal quoting a value from the proposal', async () => {
    const { env } = hostileStore({ status: `pending\u001b]0;pwned\u0007` });
    const confirm = await runIn(['confirm', ID, '--visibility', 'nope'], env);
    expect(confirm.code).toBe(1);
    expect(confirm.stderr).toMatch(/^refused: /);
    expect(confirm.stderr).toContain('pending\\x1b]0;pwned\\x07');
    expect(confirm.stderr).not.toMatch(RAW_CONTROL);
  });

  it('a run note quoting a file name from the source directory', async () => {
    const source = tempDir();
    writeFileSync(path.join(source, 'x\u001b]0;pwned\u0007\u202e.json'), '{"id": "trunc');
    const run = await runIn(['run', 'transform', '--source', source], { PIPELINE_STORE: path.join(tempDir(), 'store') });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('transform: x\\x1b]0;pwned\\x07\\u202e.json: not valid JSON');
    expect(run.stderr + run.stdout).not.toMatch(RAW_CONTROL);
  });

  it('the visualizer page: titles shown escaped, in the browser as on a terminal', async () => {
    const { env } = hostileStore();
    const page = await runIn(['viz', '--format', 'html'], env);
    expect(page.code).toBe(0);
    expect(page.stdout).not.toMatch(RAW_CONTROL);
    expect(page.stdout).toContain('pwned');
  });
});

describe('the walk (run review) prints proposal text escaped', () => {
  function terminal(answers: string[], env: Record<string, string>): { io: Io; out: () => string; err: () => string } {
    const stdin = new PassThrough();
    let out = '';
    let err = '';
    const io: Io = {
      stdout: { write: (text: string) => (out += text) },
      stderr: {
        write: (text: string) => {
          err += text;
          if (/(> |: )$/.test(text) && answers.length) setImmediate(() => stdin.write(`${answers.shift()}\n`));
          return true;
        },
      },
      stdin: Object.assign(stdin, { isTTY: true }),
      cwd: ROOT,
      env: { ...process.env, PIPELINE_CONFIG_CACHE: 'off', NO_COLOR: '1', ...env },
      interactive: true,
      stderrIsTTY: false,
      onInterrupt: () => () => {},
    };
    return { io, out: () => out, err: () => err };
  }

  it('shows the claim, the rationale and the other fields with every control escaped', async () => {
    const { store, env } = hostileStore();
    // The rationale carries a line that pretends to be another field.
    const proposal = pendingProposal(ID, HOSTILE);
    (proposal['candidate'] as Record<string, unknown>)['rationale'] = `fine\n  visibility      public\u001b[8m`;
    writeProposal(store, ID, proposal);
    const t = terminal(['q'], env);
    expect(await main(['run', 'review'], t.io)).toBe(0);
    expect(t.err()).not.toMatch(RAW_CONTROL);
    expect(t.err()).toContain('claim           pnpm \\x1b]0;pwned\\x07 \\x1b[2J\\x0dhidden \\u202eevil');
    // A line of a value is indented under the value, never at a field's place.
    expect(t.err()).toContain(`rationale       fine\n${' '.repeat(18)}  visibility      public\\x1b[8m`);
    expect(t.out()).toMatch(/review: 0 decided/);
  });
});
