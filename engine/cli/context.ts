/**
 * What a command runs with: the output, the global options, and — loaded on demand — the
 * pipeline, the store and the engine. Loading validates the whole configuration first, so an
 * invalid configuration stops every command before anything is written.
 */
import path from 'node:path';
import { loadPipeline, type Pipeline } from '../config/load.js';
import { findPipelineDir } from '../config/locate.js';
import { Engine } from '../engine.js';
import { openStore } from '../store/open.js';
import { isPostgresUrl } from '../store/postgres-store.js';
import type { Store } from '../store/types.js';
import type { IdGenerator } from '../util/ids.js';
import type { Clock } from '../util/time.js';
import type { Parsed } from './args.js';
import { Output, type Io } from './io.js';

export interface Globals {
  dir?: string;
  store?: string;
  json: boolean;
}

export interface Injected {
  clock?: Clock;
  ids?: IdGenerator;
}

export class Context {
  readonly out: Output;
  private engineCache: Engine | undefined;
  /** Stores this command opened (a database store holds connections until closed). */
  readonly stores: Store[] = [];

  constructor(
    readonly io: Io,
    readonly globals: Globals,
    readonly parsed: Parsed,
    private readonly injected: Injected = {},
  ) {
    this.out = new Output(io, { json: globals.json });
  }

  get json(): boolean {
    return this.globals.json;
  }

  pipelineDir(): string {
    return findPipelineDir(this.io.cwd, this.globals.dir);
  }

  /** --store, else PIPELINE_STORE (both relative to the working directory), else pipeline.yaml's store. */
  storeLocation(pipeline: Pipeline): string {
    const explicit = this.globals.store ?? this.io.env['PIPELINE_STORE'];
    if (!explicit) return pipeline.storeDir;
    return isPostgresUrl(explicit) ? explicit : path.resolve(this.io.cwd, explicit);
  }

  /** Close what the command opened (so a database connection never keeps the process alive). */
  async close(): Promise<void> {
    for (const store of this.stores.splice(0)) await store.close().catch(() => undefined);
  }

  /**
   * The engine for a read-only command. An explicit store (--store, PIPELINE_STORE) that does not
   * exist is said so on stderr before the empty result, so a mistyped path does not pass for an
   * empty store; the default store is simply empty until first written (SPEC §7).
   */
  async readEngine(): Promise<Engine> {
    const engine = await this.engine();
    const explicit = this.globals.store ?? this.io.env['PIPELINE_STORE'];
    if (explicit && !(await engine.store.exists())) this.out.warn(`no store at ${engine.store.location}; nothing has been written there yet`);
    return engine;
  }

  async pipeline(): Promise<Pipeline> {
    return (await this.engine()).pipeline;
  }

  async engine(): Promise<Engine> {
    if (this.engineCache) return this.engineCache;
    const pipeline = await loadPipeline(this.pipelineDir(), this.io.env);
    for (const warning of pipeline.warnings) this.out.issue(warning);
    const store = openStore(pipeline, this.storeLocation(pipeline));
    this.stores.push(store);
    this.engineCache = new Engine({
      pipeline,
      store,
      env: this.io.env,
      ...(this.injected.clock ? { clock: this.injected.clock } : {}),
      ...(this.injected.ids ? { ids: this.injected.ids } : {}),
    });
    return this.engineCache;
  }
}
