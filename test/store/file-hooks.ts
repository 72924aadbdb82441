/** The contract hooks that reach into a file store's directory (both file-store suites use them). */
import { spawnSync } from 'node:child_process';
import { mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ContractHooks } from './contract.js';

export const fileStoreHooks: Pick<ContractHooks, 'corrupt' | 'expire'> = {
  corrupt: async (store, id, text) => {
    mkdirSync(path.join(store.location, 'proposals'), { recursive: true });
    writeFileSync(path.join(store.location, 'proposals', `${id}.json`), text);
  },
  expire: async (store, lease) => {
    const file = path.join(store.location, '.claims', lease.stage, lease.key);
    unlinkSync(file);
    // The pid of a process that has exited: what a SIGKILLed owner looks like.
    writeFileSync(file, JSON.stringify({ host: os.hostname(), pid: spawnSync(process.execPath, ['-e', '0']).pid!, start: 1, nonce: 'killed' }));
  },
};
