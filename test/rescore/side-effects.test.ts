/**
 * Rescore is free and read-only (SPEC §5.7): it writes nothing to the store and calls no model.
 * The judges of a copied pipeline are pointed at providers that would leave a trace if called (a
 * local HTTP "model" that counts requests, a command that creates a file); the store is compared
 * byte for byte. The command's import graph must not reach engine/providers at all.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyPipeline, ROOT, tempDir, testEngine } from '../helpers.js';
import { commitJudged, declinedRow, expectOk, ORG, panel, runCli, snapshotTree } from './recorded.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A copy of the shipped pipeline whose judges are a counted HTTP model and a file-creating command. */
async function spiedPipeline(): Promise<{ dir: string; requests: () => number; marker: string }> {
  let requests = 0;
  server = createServer((request, response) => {
    requests++;
    response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const dir = copyPipeline();
  const marker = path.join(tempDir('rescore-marker-'), 'a-judge-was-called');
  const pipelineFile = path.join(dir, 'pipeline.yaml');
  writeFileSync(
    pipelineFile,
    readFileSync(pipelineFile, 'utf8').replace(
      'providers:\n',
      `providers:\n  spy-model: { kind: openai, base_url: "http://127.0.0.1:${port}/v1", model: spy, paid: false, attempts: 1 }\n  spy-command: { kind: command, command: "touch ${marker}" }\n`,
    ),
  );
  const judgeFile = path.join(dir, 'stages', 'judge.yaml');
  const judges = readFileSync(judgeFile, 'utf8')
    .replace('standard: standard-checks', 'standard: spy-model')
    .replace('adversarial: adversarial-checks', 'adversarial: spy-command');
  writeFileSync(judgeFile, judges);
  return { dir, requests: () => requests, marker };
}

describe('pipeline rescore side effects', () => {
  it('writes nothing to the store and calls no judge, even with flips to report', async () => {
    const spy = await spiedPipeline();
    const t = await testEngine({ dir: spy.dir });
    expect(t.pipeline.stages.find((stage) => stage.kind === 'judge')).toMatchObject({ judges: { standard: 'spy-model', adversarial: 'spy-command' } });
    await commitJudged(t, ORG, panel(0.9, 0.9, 0.7));
    const gone = await commitJudged(t, ORG, panel(0.7, 0.7, 0.9));
    await commitJudged(t, null);
    await t.store.appendLedger('declined', declinedRow(gone));
    rmSync(path.join(t.storeDir, 'proposals', `${gone.id}.json`));
    await t.store.counts([]); // bring the store's listing cache (.index/) up to date, as `status` would
    const before = snapshotTree(t.storeDir);
    const args = [
      '--dir',
      spy.dir,
      '--store',
      t.storeDir,
      'rescore',
      '--rubric',
      'test/fixtures/rescore/raised-floor.yaml',
      '--rubric',
      'test/fixtures/rescore/reweighted.yaml',
    ];

    const text = await runCli(args, { cwd: ROOT });
    expectOk(text);
    expect(text.stdout).toContain('1 approved → rejected');
    expect(text.stdout).toContain('1 rejected → approved');
    const json = await runCli([...args, '--json'], { cwd: ROOT });
    expectOk(json);

    expect(snapshotTree(t.storeDir)).toEqual(before);
    expect(spy.requests()).toBe(0);
    expect(existsSync(spy.marker)).toBe(false);
  });

  it('with a stale listing cache, changes nothing but that cache', async () => {
    const t = await testEngine();
    await commitJudged(t, ORG, panel(0.9, 0.9, 0.7));
    rmSync(path.join(t.storeDir, '.index'), { recursive: true, force: true });
    const outsideCache = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).filter(([file]) => !file.startsWith('.index')));
    const before = outsideCache(snapshotTree(t.storeDir));
    expectOk(await runCli(['--dir', ROOT, '--store', t.storeDir, 'rescore', '--rubric', 'test/fixtures/rescore/raised-floor.yaml'], { cwd: ROOT }));
    expect(outsideCache(snapshotTree(t.storeDir))).toEqual(before);
  });

  it('never imports a provider: the command and the replay stay clear of engine/providers', () => {
    const reached = importGraph([path.join(ROOT, 'engine/cli/commands/rescore.ts')]);
    // The walk must see the shared gate code, or it proves nothing.
    expect(reached).toContain('engine/jury/gate.ts');
    expect(reached).toContain('engine/jury/rescore.ts');
    expect(reached.filter((file) => file.startsWith('engine/providers/'))).toEqual([]);
  });
});

/** Every engine module reachable from `entries` through relative static or dynamic imports. */
function importGraph(entries: string[]): string[] {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, '.ts');
      if (existsSync(target)) queue.push(target);
    }
  }
  return [...seen].map((file) => path.relative(ROOT, file)).sort();
}
