/**
 * What the store's disk costs right now, beside the figures that depend on it: the write path's
 * ratios follow this VM's disk from hour to hour (docs/performance.md), so every bench run
 * records, before and after its scenarios, the two operations a durable commit is made of:
 *
 *   create   creating a file in a fresh directory under the bench's temp dir (open O_CREAT|O_EXCL,
 *            close), µs each over 2,000 files — on ext4 without a journal this includes the
 *            kernel's skipping of inodes freed in the last minutes, which other work on the
 *            machine (and the bench's own clean-ups) leaves behind;
 *   fsync    writing 4 KiB to one file and fsyncing it, µs each (median of 200);
 *   cpu      the CPU this VM gives a process right now, which drifts too: one JSON round trip and
 *            sha-256 of a 2 KiB proposal-like document, µs each (median of 9 batches of 500) —
 *            the same work costs 2× more in some hours than in others.
 *
 * A probe's files stay: removing 2,000 files would tax the file creations of the scenario that
 * follows it, which is what the probe measures. Under `bench/run.js` they are made in the bench's
 * scratch root (its TMPDIR), which it removes at its exit with everything else.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdtempSync, openSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median } from './cli.js';

/** µs per JSON round trip and sha-256 of a 2 KiB document (median of batches). */
function probeCpu(batches = 9, size = 500) {
  const doc = {
    id: '01KDVDNA00ABS4SS0DQJG7NGJK',
    status: 'confirmed',
    payload: { text: 'x'.repeat(1500), tags: ['a', 'b', 'c'], n: 42 },
    history: [{ at: '2026-01-02T09:00:00Z', event: 'confirm' }],
  };
  const each = [];
  let sink = 0;
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < size; i++) {
      const text = JSON.stringify({ ...JSON.parse(JSON.stringify(doc)), n: i }, null, 2);
      sink += createHash('sha256').update(text).digest()[0];
    }
    each.push(((performance.now() - start) * 1000) / size);
  }
  if (sink < 0) throw new Error('unreachable');
  return Math.round(median(each));
}

export function probeDisk({ files = 2000, syncs = 200 } = {}) {
  const cpuUs = probeCpu();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pipeline-bench-disk-'));
  const started = performance.now();
  for (let i = 0; i < files; i++) closeSync(openSync(path.join(dir, `f${i}`), 'wx'));
  const createUs = ((performance.now() - started) * 1000) / files;
  const fd = openSync(path.join(dir, 'synced'), 'w');
  const block = Buffer.alloc(4096, 0x61);
  const each = [];
  try {
    for (let i = 0; i < syncs; i++) {
      const start = performance.now();
      writeSync(fd, block, 0, block.length, 0);
      fsyncSync(fd);
      each.push((performance.now() - start) * 1000);
    }
  } finally {
    closeSync(fd);
  }
  return { at: new Date().toISOString(), createUs: Math.round(createUs), fsyncUs: Math.round(median(each)), cpuUs };
}
