/**
 * Random damage to configuration text, as fast-check arbitraries: delete, duplicate or swap
 * lines, give a key's value another type, insert random text, deep nesting or random bytes,
 * re-indent a line, truncate the file. Positions are fractions of the text, so a failing case
 * shrinks towards the start of the file and the smallest edit.
 */
import fc from 'fast-check';

export type Mutation =
  | { kind: 'delete_line' | 'duplicate_line' | 'swap_lines'; at: number }
  | { kind: 'retype_value'; at: number; value: string }
  | { kind: 'insert_text'; at: number; text: string }
  | { kind: 'insert_bytes'; at: number; bytes: number[] }
  | { kind: 'indent'; at: number; by: number }
  | { kind: 'truncate'; at: number };

const position = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

/** Values of every YAML type, and the hostile ones: aliases, tags, unset variables, huge numbers. */
const yamlValue = fc.oneof(
  fc.constantFrom('null', '~', 'true', 'no', '0', '-1', '1.01', '1e400', '.nan', '-.inf', '0x1F', '[]', '{}', '[1, "a", null]', '{a: 1, b: [2]}', '""', "''"),
  fc.constantFrom(
    '*nowhere',
    '&anchor value',
    '!!binary aGVsbG8=',
    '!!int "x"',
    '!custom 1',
    '${PIPELINE_FUZZ_UNSET}',
    '"${PIPELINE_FUZZ_UNSET:-}"',
    '${',
    '|',
    '>-',
    '? complex',
    '- item',
  ),
  fc.string({ maxLength: 20 }).map((text) => JSON.stringify(text)),
  fc.integer().map(String),
  fc.double({ noNaN: true }).map(String),
);

const insertion = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    ': ',
    '\n',
    '\t',
    '#',
    '- ',
    '{',
    '}',
    '[',
    ']',
    '"',
    "'",
    '&a',
    '*a',
    '<<: *a',
    '---\n',
    '...\n',
    '%YAML 1.1\n',
    'key: value\n',
    '\r\n',
    '\u0000',
    '\uFEFF',
  ),
  fc.integer({ min: 50, max: 3000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  fc.integer({ min: 50, max: 3000 }).map((depth) => '{a: '.repeat(depth) + '1' + '}'.repeat(depth)),
);

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constantFrom('delete_line', 'duplicate_line', 'swap_lines'), at: position }),
  fc.record({ kind: fc.constant('retype_value'), at: position, value: yamlValue }),
  fc.record({ kind: fc.constant('insert_text'), at: position, text: insertion }),
  fc.record({ kind: fc.constant('insert_bytes'), at: position, bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 16 }) }),
  fc.record({ kind: fc.constant('indent'), at: position, by: fc.integer({ min: -4, max: 4 }) }),
  fc.record({ kind: fc.constant('truncate'), at: position }),
) as fc.Arbitrary<Mutation>;

/** Apply one mutation to a file's bytes. */
export function applyMutation(original: Buffer, m: Mutation): Buffer {
  const text = original.toString('utf8');
  const lines = text.split('\n');
  const line = Math.min(lines.length - 1, Math.floor(m.at * lines.length));
  const offset = Math.floor(m.at * text.length);
  const join = (next: string[]) => Buffer.from(next.join('\n'), 'utf8');
  switch (m.kind) {
    case 'delete_line':
      return join(lines.filter((_, index) => index !== line));
    case 'duplicate_line':
      return join([...lines.slice(0, line + 1), lines[line]!, ...lines.slice(line + 1)]);
    case 'swap_lines': {
      const next = [...lines];
      const other = (line + 1) % next.length;
      [next[line], next[other]] = [next[other]!, next[line]!];
      return join(next);
    }
    case 'retype_value': {
      // The value after the first `key:` at or after the chosen line; else a new key there.
      const index = lines.findIndex((candidate, i) => i >= line && /^\s*[-\w"'$.]+\s*:/.test(candidate));
      if (index < 0) return join([...lines, `fuzz: ${m.value}`]);
      const next = [...lines];
      next[index] = next[index]!.replace(/^(\s*(?:- )?[-\w"'$.]+\s*:).*$/, `$1 ${m.value}`);
      return join(next);
    }
    case 'insert_text':
      return Buffer.from(text.slice(0, offset) + m.text + text.slice(offset), 'utf8');
    case 'insert_bytes': {
      const at = Math.floor(m.at * original.length);
      return Buffer.concat([original.subarray(0, at), Buffer.from(m.bytes), original.subarray(at)]);
    }
    case 'indent': {
      const next = [...lines];
      next[line] = m.by >= 0 ? ' '.repeat(m.by) + next[line] : next[line]!.replace(new RegExp(`^ {0,${-m.by}}`), '');
      return join(next);
    }
    case 'truncate':
      return original.subarray(0, Math.floor(m.at * original.length));
  }
}
