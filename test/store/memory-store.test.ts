/** The in-memory store passes the same contract: the seam is not the file store's shape. */
import { MemoryStore } from '../../engine/store/memory-store.js';
import { storeContract } from './contract.js';

storeContract('memory store', {
  make: async (layout) => new MemoryStore(layout),
  reopen: async (store) => (store as MemoryStore).reopen(),
  corrupt: async (store, id, text) => (store as MemoryStore).putRaw(id, text),
  expire: async (store, lease) => (store as MemoryStore).expireLease(lease),
});
