/**
 * SPEC §7, help that teaches: `help COMMAND` and `COMMAND --help` print the usage, every option with
 * its default, the allowed values read from the configuration, and one example; `judge --help`
 * shows the verdict format; an unknown command (also after `help`) is exit 1 with a hint. Wording
 * is pinned with inline snapshots so it cannot drift silently.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommandArgs } from '../../engine/cli/args.js';
import { BUILT_INS } from '../../engine/cli/commands.js';
import { allSpecs } from '../../engine/cli/help.js';
import { copyPipeline, shippedPipeline } from '../helpers.js';
import { runIn } from './memory-io.js';

describe('pipeline help', () => {
  it('lines the global options up in their own column (no "--store DIRthe store")', async () => {
    const ran = await runIn(['help'], {});
    expect(ran.code).toBe(0);
    const globals = ran.stdout.slice(ran.stdout.indexOf('global options'), ran.stdout.indexOf('exit codes'));
    expect(globals).toMatchInlineSnapshot(`
      "global options (before or after the command):
        --dir DIR    the pipeline directory (default: the nearest directory above
                     holding pipeline.yaml)
        --store DIR  the store directory (default: PIPELINE_STORE, else store: in
                     pipeline.yaml)
        --json       machine-readable output on stdout, never mixed with prose
        -h, --help   this help

      "
    `);
    expect(ran.stdout).toMatch(/^ {2}unpass +Take a pass back/m);
    for (const line of ran.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });

  it("prints a command's usage, every option with its default and allowed values from the configuration, and an example", async () => {
    const ran = await runIn(['help', 'list'], {});
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatchInlineSnapshot(`
      "usage: pipeline list [--state S|all] [--where FIELD=VALUE …] [--grep TEXT] [--json]

      proposals in a state, by id (default: the initial state)

      options:
        --state S            the state to list; all lists every state (default:
                             pending) — one of pending, confirmed, passed, approved,
                             rejected, archived or all
        --where FIELD=VALUE  only proposals whose FIELD (a dotted path) equals VALUE;
                             repeatable, all must hold (default: no filter)
        --grep TEXT          only proposals whose title contains TEXT, in any case
                             (default: no filter)

      global options: --dir DIR, --store DIR, --json, -h, --help (see \`pipeline help\`)

      example:
        pipeline list --state confirmed --grep timeout
      "
    `);
    const viaFlag = await runIn(['list', '--help'], {});
    expect(viaFlag).toEqual(ran);
  });

  it('shows the stages of the configuration for run, and the default concurrency', async () => {
    const ran = await runIn(['run', '--help'], {});
    expect(ran.stdout).toMatchInlineSnapshot(`
      "usage: pipeline run [<stage>] [--concurrency N] [--limit N] [--dry-run] [--yes] [--no-cache] [--source DIR]

      run a stage; with no stage, every automatic stage in pipeline order

      arguments:
        <stage>  the stage to run; a review stage walks its queue on a terminal
                 (default: every automatic stage in pipeline order) — one of
                 transform, review, judge or promote

      options:
        --concurrency N  how many proposals are worked on at once (default: 8)
        --limit N        process at most N (default: no limit)
        --dry-run        print the plan (proposals, model calls) and write nothing
        -y, --yes        spend on paid model calls without asking
        --no-cache       ask the models again instead of reusing cached answers
        --source DIR     read source records from DIR (transform stages) (default:
                         examples/artifacts (transform))
        (flags are off unless given)

      global options: --dir DIR, --store DIR, --json, -h, --help (see \`pipeline help\`)

      example:
        pipeline run judge --dry-run
      "
    `);
  });

  it('gives viz its default port', async () => {
    const ran = await runIn(['viz', '--help'], {});
    expect(ran.stdout).toMatch(/--port N {4}the port for --serve; 0 picks a free one \(default: 4173\)/);
  });

  it('shows the verdict format for judge, with the rubrics of the configuration', async () => {
    const ran = await runIn(['judge', '--help'], {});
    expect(ran.code).toBe(0);
    expect(ran.stdout.slice(ran.stdout.indexOf('verdicts: a JSON array'))).toMatchInlineSnapshot(`
      "verdicts: a JSON array with one object per seat of the proposal's panel, e.g.
        [
          {"judge_type": "standard", "score": 0.8, "passed": true,
           "criterion_scores": {"grounding": 0.8, "scope_accuracy": 0.8, "generality": 0.8},
           "feedback_summary": "one or two sentences"},
          {"judge_type": "adversarial", "score": 0.8, "passed": true,
           "criterion_scores": {"grounding": 0.8, "scope_accuracy": 0.8, "generality": 0.8},
           "feedback_summary": "one or two sentences"}
        ]
        judge_type        a seat of the rubric's panel; the array holds every seat,
                          each once
        score             a number in [0, 1]
        passed            true or false
        criterion_scores  {criterion: number in [0, 1]}; criteria the rubric does not
                          name are dropped
        feedback_summary  optional text (cut at 4000 characters)
        confidence        optional, a number in [0, 1]
        usage             optional {tokens_in, tokens_out}: whole numbers, or null
                          when unknown
      Any other key is dropped. Input that is not such an array leaves the proposal
      unjudged (exit 2).

      the rubric, by visibility:
        private  no jury (private_no_jury): judged at once, no verdicts needed
        org      lesson-promotion: panel standard, adversarial; criteria
                 grounding≥0.7, scope_accuracy≥0.7, generality≥0.6
        public   lesson-promotion-public: panel standard, adversarial; criteria
                 grounding≥0.7, scope_accuracy≥0.7, generality≥0.6, disclosure≥0.9

      example:
        pipeline judge 01JC8A7ZJ4W6V3X8RDY2C5N9KT --verdicts verdicts.json
      "
    `);
  });

  it('describes a review command from its YAML: allowed values, defaults, where it applies, an example', async () => {
    const ran = await runIn(['help', 'confirm'], {});
    expect(ran.stdout).toMatchInlineSnapshot(`
      "usage: pipeline confirm <id> --visibility private|org|public [--version-independent TEXT]

      Send it to the jury at a visibility (private runs no jury).

      arguments:
        <id>  a proposal id (a ULID), or the artifact_id the proposal was made from

      options:
        --visibility V              who may see the lesson (default: required) — one
                                    of private, org or public
        --version-independent TEXT  rewrite the scope to version_independent, with
                                    this justification (default: not given)

      global options: --dir DIR, --store DIR, --json, -h, --help (see \`pipeline help\`)

      It applies to pending or confirmed proposals (the confirm event of the
      lifecycle).

      example:
        pipeline confirm 01JC8A7ZJ4W6V3X8RDY2C5N9KT --visibility org
      "
    `);
    expect((await runIn(['pass', '--help'], {})).stdout).toMatch(/example:\n {2}pipeline pass 01JC8A7ZJ4W6V3X8RDY2C5N9KT "not worth sharing"\n/);
  });

  it('reads the allowed values from the configuration, not from the engine', async () => {
    const dir = copyPipeline();
    const file = path.join(dir, 'stages', 'review.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('enum: [private, org, public]', 'enum: [private, org, public, team]'));
    const ran = await runIn(['help', 'confirm', '--dir', dir], {});
    expect(ran.stdout).toMatch(/one\s+of private, org, public or team/);
  });

  it('refuses an unknown command after help with exit 1 and a "did you mean" hint', async () => {
    const unknown = await runIn(['help', 'nosuch'], {});
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatchInlineSnapshot(`
      "error: unknown command: nosuch
        hint: run \`pipeline help\` for the list of commands
      "
    `);
    const near = await runIn(['help', 'promot'], {});
    expect(near.code).toBe(1);
    expect(near.stderr).toMatchInlineSnapshot(`
      "error: unknown command: promot
        hint: did you mean "promote"? (\`pipeline help\` lists every command)
      "
    `);
  });

  it('refuses an unknown command with exit 1, suggesting review commands too', async () => {
    const typo = await runIn(['lsit'], {});
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatchInlineSnapshot(`
      "error: unknown command: lsit
        hint: did you mean "list"? (\`pipeline help\` lists every command)
      "
    `);
    expect((await runIn(['unpas', 'x'], {})).stderr).toMatch(/did you mean "unpass"\?/);
  });
});

describe('every command spec is complete', () => {
  it('describes every option, gives every value option a default, names every option in its usage, and has an example', async () => {
    const pipeline = await shippedPipeline();
    for (const spec of allSpecs({ pipeline })) {
      expect(spec.example, spec.name).toBeDefined();
      expect(spec.summary, spec.name).not.toBe('');
      for (const [name, option] of Object.entries(spec.options)) {
        expect(option.description, `${spec.name} --${name}`).toBeTruthy();
        if (option.type === 'string') expect(option.default, `${spec.name} --${name}`).toBeDefined();
        expect(spec.usage, `${spec.name} --${name}`).toContain(`--${name}`);
      }
      expect(spec.arguments?.length ?? 0, `${spec.name}: every positional is described`).toBe(spec.positionals[1]);
    }
  });

  it("gives examples that parse with the command's own options", async () => {
    const pipeline = await shippedPipeline();
    for (const spec of allSpecs({ pipeline })) {
      const example = typeof spec.example === 'function' ? spec.example(pipeline) : spec.example!;
      const tokens = [...example.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2]!);
      expect(tokens.slice(0, 1 + spec.name.split(' ').length), example).toEqual(['pipeline', ...spec.name.split(' ')]);
      const parsed = parseCommandArgs(tokens.slice(1 + spec.name.split(' ').length), spec.options);
      expect(parsed.positionals.length, example).toBeGreaterThanOrEqual(spec.positionals[0]);
      expect(parsed.positionals.length, example).toBeLessThanOrEqual(spec.positionals[1]);
    }
    expect(BUILT_INS.length).toBeGreaterThan(10);
  });
});
