/**
 * What the store's disk costs right now, beside the figures that depend on it: the write path's
 * ratios follow this VM's disk from hour to hour (docs/performance.md), so every bench run
 * records, before and after its scenarios, the two operations a durable commit is made of:
 *
 *   create   creating a file in a fresh directory under the bench's temp dir (open O_CREAT|O_EXCL,
 *            close), µs each over 2,000 files — on ext4 without a journal this includes the
 *            kernel's skipping of inodes freed in the last minutes, which other work on the
 *            machine (and the bench's own clean-ups) leaves behind;
 *   fsync    writing 4 KiB to one file and fsyncing it, µs each (median of 200).
 *
 * A probe's files stay until `removeProbes()` at the end of the bench: removing 2,000 files would
 * tax the file creations of the scenario that follows it, which is what the probe measures.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median } from './cli.js';

const probes = [];

export function probeDisk({ files = 2000, syncs = 200 } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pipeline-bench-disk-'));
  probes.push(dir);
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
  return { at: new Date().toISOString(), createUs: Math.round(createUs), fsyncUs: Math.round(median(each)) };
}

/** Remove every probe's files (once the last figure is taken). */
export function removeProbes() {
  for (const dir of probes.splice(0)) rmSync(dir, { recursive: true, force: true });
}
