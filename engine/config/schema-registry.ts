/**
 * The pipeline's JSON Schemas — named domain schemas, guard schemas, argument and check schemas —
 * compiled on first use, so a command pays only for the validators it runs. `compileAll`
 * compiles every one of them (`pipeline validate`, and any load in full mode).
 */
import type { Ajv, ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import { describeErrors, type Finding } from './describe-errors.js';
import type { SourceFile } from './source.js';

/** Where an inline schema was declared, for positioned errors. */
export interface Place {
  source: SourceFile;
  path: string[];
}

export class SchemaRegistry {
  private instance: Ajv | undefined;
  private readonly makeAjv: (() => Ajv) | undefined;
  /** Named schemas not yet given to ajv (a lazy registry creates it on first compile). */
  private readonly pending: [object, string][] = [];
  /** Domain schema name → ajv id. */
  private readonly named = new Map<string, string>();
  private readonly anonymous = new Map<string, object | boolean>();
  private readonly places = new Map<string, Place>();
  private readonly compiled = new Map<string, ValidateFunction>();
  /** Validators compiled earlier, by key (see `usePrebuilt`). */
  private prebuilt: ((key: string) => ValidateFunction | undefined) | undefined;

  /** With an ajv instance, schemas are added to it at once; with a factory, on the first compile. */
  constructor(ajv: Ajv | (() => Ajv) = createAjv()) {
    if (typeof ajv === 'function') this.makeAjv = ajv;
    else this.instance = ajv;
  }

  get ajv(): Ajv {
    if (!this.instance) {
      this.instance = this.makeAjv!();
      for (const [schema, id] of this.pending) this.instance.addSchema(schema, id);
      this.pending.length = 0;
    }
    return this.instance;
  }

  /** Register a named domain schema (referenced by others through its $id). */
  addNamed(name: string, id: string, schema: object): void {
    if (this.instance) this.instance.addSchema(schema, id);
    else this.pending.push([schema, id]);
    this.named.set(name, id);
  }

  /** Register a schema declared inline in YAML (a guard, an argument, a check) under a key. */
  addInline(key: string, schema: object | boolean, place?: Place): void {
    this.anonymous.set(key, schema);
    if (place) this.places.set(key, place);
  }

  has(name: string): boolean {
    return this.named.has(name);
  }

  names(): string[] {
    return [...this.named.keys()];
  }

  /** The validator of a named schema. Throws if the name is unknown (checked at load). */
  named$(name: string): ValidateFunction {
    const id = this.named.get(name);
    if (id === undefined) throw new Error(`unknown schema "${name}"`);
    const key = namedKey(name);
    const cached = this.compiled.get(key);
    if (cached) return cached;
    const validate = this.prebuilt?.(key) ?? this.ajv.getSchema(id);
    if (!validate) throw new Error(`schema "${name}" did not compile`);
    this.compiled.set(key, validate);
    return validate;
  }

  inline(key: string): ValidateFunction {
    const cached = this.compiled.get(key);
    if (cached) return cached;
    const schema = this.anonymous.get(key);
    if (schema === undefined) throw new Error(`unknown inline schema "${key}"`);
    const validate = this.prebuilt?.(key) ?? this.ajv.compile(schema as object);
    this.compiled.set(key, validate);
    return validate;
  }

  /** The key of every schema: named ones under `namedKey(name)`, then the inline ones. */
  keys(): string[] {
    return [...[...this.named.keys()].map(namedKey), ...this.anonymous.keys()];
  }

  /** Every schema's validator, by key as in `keys`, compiling those not compiled yet. */
  validatorsByKey(): [string, ValidateFunction][] {
    const named = [...this.named.keys()].map((name): [string, ValidateFunction] => [namedKey(name), this.named$(name)]);
    return [...named, ...[...this.anonymous.keys()].map((key): [string, ValidateFunction] => [key, this.inline(key)])];
  }

  /**
   * Validators compiled earlier (standalone code from the configuration cache), used instead of
   * compiling: `of(key)` returns the schema's validator, or undefined to compile it here.
   */
  usePrebuilt(of: (key: string) => ValidateFunction | undefined): void {
    this.prebuilt = of;
  }

  /** Validate against a named schema; findings empty when valid. */
  check(name: string, data: unknown): Finding[] {
    const validate = this.named$(name);
    return validate(data) ? [] : describeErrors(validate.errors);
  }

  /** Compile everything; returns the keys (or names) that fail with their messages. */
  compileAll(): { key: string; message: string; place?: Place }[] {
    const failures: { key: string; message: string; place?: Place }[] = [];
    for (const name of this.named.keys()) {
      try {
        this.named$(name);
      } catch (error) {
        failures.push({ key: `schema:${name}`, message: (error as Error).message });
      }
    }
    for (const key of this.anonymous.keys()) {
      try {
        this.inline(key);
      } catch (error) {
        const place = this.places.get(key);
        failures.push({ key, message: (error as Error).message, ...(place ? { place } : {}) });
      }
    }
    return failures;
  }
}

/** The key of a named domain schema among `keys()` (inline keys never start with a slash). */
export function namedKey(name: string): string {
  return `/named/${name}`;
}
