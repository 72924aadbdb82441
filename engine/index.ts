/** The engine's public API, for scripts, benchmarks and other tools. */
export { loadPipeline, type Pipeline } from './config/load.js';
export { buildPipeline } from './config/build.js';
export { Engine, type EngineOptions } from './engine.js';
export { FileStore } from './store/file-store.js';
export { openFileStore } from './store/open.js';
export type { Store, AuditRow, Stored } from './store/types.js';
export type { Outcome } from './outcome.js';
