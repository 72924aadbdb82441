#!/usr/bin/env node
// Generate engine/config/schema-types.generated.ts — the TypeScript types of the configuration
// files — from the schemas that validate them (schemas/config/*.schema.json), so the two cannot
// drift. `--check` writes nothing and fails when the committed file differs from what the schemas
// generate (the build and a test run it); without it the file is (re)written.
// `--root DIR` reads DIR/schemas/config and writes DIR/engine/config instead (the tests use it).
//
// json-schema-to-typescript does the generation. A few schema shapes it would type loosely are
// first rewritten, on a copy, into shapes with the same meaning that it types exactly:
// - the `kind` conditionals (`allOf: [{if: {kind: X}, then: {$ref: X}}…]`) become a union of the
//   `then` branches: a discriminated union by `kind`;
// - `oneOf` alternatives that only require keys (an operation is {set, to} or {remove} or …)
//   become an intersection of the object with a union of its alternatives, where the keys an
//   alternative rules out are typed `never`;
// - `not: {}` (a key that must be absent) becomes `never`; a subschema that constrains nothing
//   becomes `unknown`.
// Every other keyword must be one the types can ignore (a validation-only or custom keyword of
// engine/config/ajv.ts) or one json-schema-to-typescript reads; anything else stops the generator,
// so a new construct in a schema is decided here rather than typed wrongly.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const KINDS = ['pipeline', 'machine', 'stage', 'rubric'];
const OUTPUT = path.join('engine', 'config', 'schema-types.generated.ts');

/** Type names: the root of each schema, and its definitions (others get `<Kind><Definition>`). */
const NAMES = {
  pipeline: {
    '': 'PipelineFile',
    duration: 'Duration',
    provider: 'ProviderConfig',
    check: 'Check',
    checks: 'ChecksProviderConfig',
    map: 'MapProviderConfig',
    command: 'CommandProviderConfig',
    openai: 'OpenAIProviderConfig',
    anthropic: 'AnthropicProviderConfig',
    apiKeyEnv: 'ApiKeyEnv',
    baseUrl: 'BaseUrl',
    providerCommon: 'ProviderCommon',
  },
  machine: { '': 'MachineFile', state: 'StateConfig', transition: 'TransitionConfig', operation: 'Operation' },
  stage: {
    '': 'StageFile',
    name: 'StageName',
    path: 'FieldPath',
    transform: 'TransformStageFile',
    review: 'ReviewStageFile',
    command: 'ReviewCommand',
    judge: 'JudgeStageFile',
    promote: 'PromoteStageFile',
  },
  rubric: { '': 'RubricFile' },
};

/** Keywords json-schema-to-typescript reads (or that rewriting below produces). */
const TYPED = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  'definitions',
  'title',
  'description',
  'default',
  'tsType',
]);
/** Keywords that narrow values in ways TypeScript types do not express: validation only. */
const IGNORED = new Set([
  '$schema',
  '$id',
  'markdownDescription',
  'examples',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'propertyNames',
  // engine/config/ajv.ts: a message for people, and checks across items or members
  'message',
  'sumEquals',
  'uniqueProperty',
  'keysListed',
]);
/** Keywords that say what a value is (a subschema without any of them accepts anything). */
const SHAPING = ['type', 'properties', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref', 'not', 'if', 'tsType'];

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
const pascal = (text) => text.replace(/(^|[^A-Za-z0-9])([A-Za-z0-9])/g, (_, _sep, char) => char.toUpperCase());

class SchemaShapeError extends Error {}

function fail(file, at, message) {
  throw new SchemaShapeError(`${file}: ${at.length ? `at ${at.join('/')}: ` : ''}${message}`);
}

/** The definition a local `$ref` points at (only `#/definitions/<name>` is followed). */
function definition(root, ref) {
  const match = /^#\/definitions\/([^/]+)$/.exec(ref ?? '');
  return match ? root.definitions?.[match[1]] : undefined;
}

/**
 * `allOf: [{if: {properties: {K: {const: V}}, required: [K]}, then: S}…]` on a node whose `K` is
 * `enum` of exactly those V, each S requiring K with `const: V`: valid data is exactly one of the
 * S, so the node's type is their union.
 */
function discriminated(node, root, file, at) {
  const branches = node.allOf.map((part, index) => {
    const test = part.if;
    const keys = isObject(test) ? Object.keys(test) : [];
    const key = isObject(test?.properties) ? Object.keys(test.properties)[0] : undefined;
    const value = key === undefined ? undefined : test.properties[key]?.const;
    const shape =
      keys.length === 2 &&
      keys.includes('properties') &&
      keys.includes('required') &&
      Object.keys(test.properties).length === 1 &&
      test.required.length === 1 &&
      test.required[0] === key;
    if (!shape || typeof value !== 'string' || !isObject(part.then) || Object.keys(part).some((k) => k !== 'if' && k !== 'then')) {
      fail(
        file,
        [...at, 'allOf', String(index)],
        'only `if: {properties: {K: {const: V}}, required: [K]}, then: …` conditionals (a discriminated union by K) can be typed',
      );
    }
    return { key, value, then: part.then };
  });
  const key = branches[0].key;
  const declared = node.properties?.[key]?.enum;
  const values = branches.map((branch) => branch.value);
  if (
    branches.some((branch) => branch.key !== key) ||
    !Array.isArray(declared) ||
    declared.length !== values.length ||
    !declared.every((value) => values.includes(value)) ||
    !node.required?.includes(key)
  ) {
    fail(file, at, `the conditionals must cover exactly the required \`${key}\` enum`);
  }
  for (const [index, branch] of branches.entries()) {
    const target = definition(root, branch.then.$ref) ?? branch.then;
    if (target.properties?.[key]?.const !== branch.value || !target.required?.includes(key)) {
      fail(file, [...at, 'allOf', String(index), 'then'], `the branch for ${key} "${branch.value}" must require ${key} with const "${branch.value}"`);
    }
  }
  const { allOf: _allOf, properties: _properties, required: _required, type: _type, ...rest } = node;
  return { ...rest, anyOf: branches.map((branch) => branch.then) };
}

/** `{required: [..], not?: {anyOf: [{required: [k]}…]}}`: an alternative that only requires and rules out keys. */
function keysAlternative(alternative) {
  if (!isObject(alternative) || !Array.isArray(alternative.required)) return undefined;
  if (Object.keys(alternative).some((key) => key !== 'required' && key !== 'not')) return undefined;
  const excluded = [];
  if (alternative.not !== undefined) {
    const anyOf = alternative.not.anyOf;
    if (Object.keys(alternative.not).length !== 1 || !Array.isArray(anyOf)) return undefined;
    for (const part of anyOf) {
      if (!isObject(part) || Object.keys(part).length !== 1 || !Array.isArray(part.required) || part.required.length !== 1) return undefined;
      excluded.push(part.required[0]);
    }
  }
  return { required: alternative.required, excluded };
}

/**
 * An object whose `oneOf` alternatives only require (and rule out) keys: the object (every key
 * optional) intersected with a union of the alternatives. Under `oneOf` a value matches exactly
 * one alternative, so an alternative rules out, besides what its `not` names, the keys that are
 * on their own another alternative.
 */
function keyedAlternatives(node, file, at) {
  const alternatives = node.oneOf.map(keysAlternative);
  if (alternatives.some((alternative) => alternative === undefined) || !isObject(node.properties)) return undefined;
  const variants = alternatives.map((alternative, index) => {
    const alone = alternatives.filter((other, j) => j !== index && other.required.length === 1).map((other) => other.required[0]);
    const excluded = [...new Set([...alternative.excluded, ...alone])].filter((key) => !alternative.required.includes(key));
    const properties = {};
    for (const key of alternative.required) {
      if (!(key in node.properties)) fail(file, [...at, 'oneOf', String(index)], `"${key}" is required but not a declared property`);
      properties[key] = node.properties[key];
    }
    for (const key of excluded) properties[key] = { tsType: 'never' };
    return { type: 'object', required: alternative.required, properties, additionalProperties: false };
  });
  const { oneOf: _oneOf, ...rest } = node;
  const { description, ...base } = rest;
  return { ...(description === undefined ? {} : { description }), allOf: [base, { anyOf: variants }] };
}

/** Rewrite one subschema (and everything under it) for the type generator. */
function rewrite(node, root, file, at) {
  if (!isObject(node)) return node;
  for (const key of Object.keys(node)) {
    if (!TYPED.has(key) && !IGNORED.has(key) && key !== 'not' && key !== 'if' && key !== 'then' && key !== 'else')
      fail(file, at, `keyword "${key}" is not known to the type generator: decide in scripts/generate-config-types.js how it types`);
  }
  let out = { ...node };
  if (isObject(out.not) && Object.keys(out.not).length === 0) {
    // `not: {}` matches nothing: the key must be absent.
    const { not: _not, ...rest } = out;
    out = { ...rest, tsType: 'never' };
  } else if (out.not !== undefined) {
    // `not` narrows a value its other keywords already type (a pattern, a reserved word).
    if (!SHAPING.some((key) => key !== 'not' && key in out)) fail(file, at, '`not` on its own cannot be typed');
    const { not: _not, ...rest } = out;
    out = rest;
  }
  if (Array.isArray(out.allOf) && out.allOf.some((part) => isObject(part) && 'if' in part)) out = discriminated(out, root, file, at);
  if ('if' in out || 'then' in out || 'else' in out) fail(file, at, 'only `kind` conditionals under allOf can be typed');
  if (Array.isArray(out.oneOf) && out.properties) {
    const keyed = keyedAlternatives(out, file, at);
    if (keyed) out = keyed;
  }
  if (!SHAPING.some((key) => key in out)) out = { ...out, tsType: 'unknown' };
  if (out.$ref !== undefined) {
    // Annotations beside a $ref would make the generator declare a copy of the referenced type.
    const { description: _description, default: _default, ...rest } = out;
    out = rest;
  }

  const result = {};
  for (const [key, value] of Object.entries(out)) {
    if (key === 'properties' || key === 'definitions') {
      result[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, rewrite(sub, root, file, [...at, key, name])]));
    } else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
      result[key] = value.map((sub, index) => rewrite(sub, root, file, [...at, key, String(index)]));
    } else if (key === 'items' || key === 'additionalProperties') {
      result[key] = isObject(value) ? rewrite(value, root, file, [...at, key]) : value;
    } else if (key === 'title' || key === 'message' || IGNORED.has(key)) {
      // Titles would name inline types; names come from NAMES. Validation-only keywords type nothing.
    } else {
      result[key] = value;
    }
  }
  return result;
}

/** The schema of one configuration file, rewritten and named for the generator. */
export function typeSchema(kind, schema, file = `${kind}.schema.json`) {
  const names = NAMES[kind] ?? {};
  const rewritten = rewrite(schema, schema, file, []);
  rewritten.title = names[''] ?? `${pascal(kind)}File`;
  for (const name of Object.keys(rewritten.definitions ?? {})) {
    rewritten.definitions[name].title = names[name] ?? `${pascal(kind)}${pascal(name)}`;
  }
  return rewritten;
}

const BANNER = `// Generated by scripts/generate-config-types.js from schemas/config/*.schema.json — do not edit.
// After changing a schema, run \`npm run generate:types\` (the build and the tests fail until then).
`;

/** The text of the generated module for the schemas under `root`. */
export async function generate(root) {
  const parts = [];
  for (const kind of KINDS) {
    const file = path.join(root, 'schemas', 'config', `${kind}.schema.json`);
    const schema = JSON.parse(readFileSync(file, 'utf8'));
    const typed = typeSchema(kind, schema, path.relative(root, file));
    parts.push(
      await compile(typed, typed.title, {
        bannerComment: '',
        additionalProperties: true,
        strictIndexSignatures: false,
        ignoreMinAndMaxItems: true,
        unknownAny: true,
        unreachableDefinitions: false,
        declareExternallyReferenced: true,
        format: true,
        style: { singleQuote: true, printWidth: 140, trailingComma: 'all' },
      }),
    );
  }
  return `${BANNER}\n${parts.map((part) => part.trim()).join('\n\n')}\n`;
}

async function main(argv) {
  const check = argv.includes('--check');
  const rootAt = argv.indexOf('--root');
  const root = rootAt >= 0 ? path.resolve(argv[rootAt + 1] ?? '.') : path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  const out = path.join(root, OUTPUT);
  let text;
  try {
    text = await generate(root);
  } catch (error) {
    if (!(error instanceof SchemaShapeError)) throw error;
    console.error(`generate-config-types: ${error.message}`);
    return 1;
  }
  let current;
  try {
    current = readFileSync(out, 'utf8');
  } catch {
    current = undefined;
  }
  if (check) {
    if (current === text) return 0;
    console.error(
      `${OUTPUT} is ${current === undefined ? 'missing' : 'out of date with schemas/config/*.schema.json'}: run \`npm run generate:types\` and commit the result`,
    );
    return 1;
  }
  if (current !== text) {
    writeFileSync(out, text);
    console.log(`wrote ${OUTPUT}`);
  }
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
