/**
 * SPEC §6: every regular expression the engine or a shipped `checks` / `map` provider applies to
 * proposal, record or answer text runs in linear time. Each pattern of the shipped pipeline
 * (checks, the map provider, the transform's pre-gate), of the secret scanner and of the prompt
 * renderer is run over long adversarial runs in a child process; a pattern that backtracks over
 * the run from every start position would need minutes there, and the watchdog names it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { TransformStageDef } from '../../engine/config/types.js';
import { PATTERN_FLAGS } from '../../engine/expr/evaluate.js';
import { CLOSING_TAG } from '../../engine/expr/template.js';
import { ABSENT_FLAGS } from '../../engine/providers/checks.js';
import { OPAQUE_RUN, SECRET_PATTERNS } from '../../engine/providers/secret-scan.js';
import { isObject } from '../../engine/util/json-path.js';
import { shippedPipeline } from '../helpers.js';

const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers', 'regex-probe.mjs');
/** Characters per run: a quadratic pattern needs minutes on runs this long, a linear one moments. */
const RUN = 100_000;
/** How long one pattern's probe may take before it is called out (linear ones take well under a second). */
const PER_PATTERN_MS = 20_000;

interface Pattern {
  where: string;
  source: string;
  flags: string;
}

/** `$match` / `$pairs` patterns in a map provider's expressions. */
function expressionPatterns(node: unknown, where: string, into: Pattern[]): Pattern[] {
  if (Array.isArray(node)) node.forEach((item) => expressionPatterns(item, where, into));
  else if (isObject(node)) {
    if (typeof node['$match'] === 'string')
      into.push({ where: `${where} $match ${node['$match']}`, source: String(node['pattern']), flags: PATTERN_FLAGS.match });
    if (typeof node['$pairs'] === 'string') {
      into.push({ where: `${where} $pairs line`, source: String(node['line']), flags: PATTERN_FLAGS.line });
      into.push({ where: `${where} $pairs item`, source: String(node['item']), flags: PATTERN_FLAGS.item });
    }
    for (const value of Object.values(node)) expressionPatterns(value, where, into);
  }
  return into;
}

async function shippedPatterns(): Promise<Pattern[]> {
  const pipeline = await shippedPipeline();
  const patterns: Pattern[] = SECRET_PATTERNS.map((secret) => ({
    where: `secrets.ts ${secret.name}`,
    source: secret.pattern.source,
    flags: secret.pattern.flags,
  }));
  patterns.push({ where: 'secrets.ts opaque runs (masking)', source: OPAQUE_RUN.source, flags: OPAQUE_RUN.flags });
  patterns.push({ where: 'prompt closing tags', source: CLOSING_TAG.source, flags: CLOSING_TAG.flags });
  for (const [name, provider] of Object.entries(pipeline.def.providers ?? {})) {
    if (provider.kind === 'checks') {
      for (const [criterion, checks] of Object.entries(provider['criteria'] as Record<string, { absent?: { patterns: string[] } }[]>)) {
        for (const check of checks)
          for (const source of check.absent?.patterns ?? []) patterns.push({ where: `${name} ${criterion}`, source, flags: ABSENT_FLAGS });
      }
    }
    if (provider.kind === 'map') expressionPatterns([provider['refuse'], provider['output']], name, patterns);
  }
  for (const stage of pipeline.stages) {
    if (stage.kind === 'transform')
      for (const source of (stage as TransformStageDef).pregate?.patterns ?? []) patterns.push({ where: `${stage.name} pregate`, source, flags: '' });
  }
  const seen = new Set<string>();
  return patterns.filter((pattern) => !seen.has(pattern.source + pattern.flags) && seen.add(pattern.source + pattern.flags));
}

/** Run every probe; resolves with the patterns that finished, or the one whose probe the watchdog stopped. */
function probe(patterns: Pattern[]): Promise<{ finished: number; stuck?: Pattern }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PROBE, String(RUN)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let finished = 0;
    let current: Pattern | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [what, index] = line.split(' ');
        clearTimeout(watchdog);
        if (what === 'done') finished++;
        if (what !== 'start') continue;
        current = patterns[Number(index)];
        watchdog = setTimeout(() => child.kill('SIGKILL'), PER_PATTERN_MS);
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      resolve(signal || code !== 0 ? { finished, ...(current ? { stuck: current } : {}) } : { finished });
    });
    child.stdin.end(JSON.stringify(patterns.map(({ source, flags }) => ({ source, flags }))));
  });
}

describe('regular expressions applied to untrusted text', () => {
  it('finish a catastrophic-backtracking probe, pattern by pattern', async () => {
    const patterns = await shippedPatterns();
    // The shipped set: the scanner's 13, the prompt's 1, the checks' distinct absent patterns, the map's and the pre-gate's.
    expect(patterns.length).toBeGreaterThanOrEqual(25);
    const result = await probe(patterns);
    expect(result.stuck && `${result.stuck.where}: /${result.stuck.source}/${result.stuck.flags} backtracks`).toBeUndefined();
    expect(result.finished).toBe(patterns.length);
  }, 600_000);
});
