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
  readonly ajv: Ajv;
  /** Domain schema name → ajv id. */
  private readonly named = new Map<string, string>();
  private readonly anonymous = new Map<string, object | boolean>();
  private readonly places = new Map<string, Place>();
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(ajv: Ajv = createAjv()) {
    this.ajv = ajv;
  }

  /** Register a named domain schema (referenced by others through its $id). */
  addNamed(name: string, id: string, schema: object): void {
    this.ajv.addSchema(schema, id);
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
    const validate = this.ajv.getSchema(id);
    if (!validate) throw new Error(`schema "${name}" did not compile`);
    return validate;
  }

  inline(key: string): ValidateFunction {
    const cached = this.compiled.get(key);
    if (cached) return cached;
    const schema = this.anonymous.get(key);
    if (schema === undefined) throw new Error(`unknown inline schema "${key}"`);
    const validate = this.ajv.compile(schema as object);
    this.compiled.set(key, validate);
    return validate;
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
