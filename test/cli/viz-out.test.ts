/** `viz --out FILE` that cannot be written says why in plain words, naming the file given and no temporary file. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeWriteError } from '../../engine/cli/commands/viz.js';
import { tempDir } from '../helpers.js';
import { runIn } from './memory-io.js';

describe('viz --out', () => {
  it('into a directory that does not exist: "no such directory", exit 1, no temp name', async () => {
    const missing = path.join(tempDir(), 'nonexistent', 'x.html');
    const store = path.join(tempDir(), 'store');
    const viz = await runIn(['viz', '--out', missing], { PIPELINE_STORE: store });
    expect(viz.code).toBe(1);
    // (the store was never written: that is said first, as for every read-only command)
    expect(viz.stderr).toBe(`warning: no store at ${store}; nothing has been written there yet\nerror: cannot write ${missing}: no such directory\n`);
  });

  it('onto a directory: "it is a directory", no temp name', async () => {
    const dir = path.join(tempDir(), 'taken');
    mkdirSync(dir);
    const store = tempDir();
    const viz = await runIn(['viz', '--format', 'svg', '--out', dir], { PIPELINE_STORE: store });
    expect(viz.code).toBe(1);
    expect(viz.stderr).toBe(`warning: no store at ${store}; nothing has been written there yet\nerror: cannot write ${dir}: it is a directory\n`);
  });

  it('words a system error by its code, never by its message (which names the temp file)', () => {
    const error = Object.assign(new Error("ENOSPC: no space left on device, write '/x/.x.html.1.tmp'"), { code: 'ENOSPC' });
    expect(describeWriteError(error)).toBe('no space left on the device');
    expect(describeWriteError(Object.assign(new Error('odd /x/.x.html.1.tmp'), { code: 'EWHATEVER' }))).toBe('the system refused it (EWHATEVER)');
    expect(describeWriteError(Object.assign(new Error('x'), { code: 'constructor' }))).toBe('the system refused it (constructor)');
  });
});
