/**
 * `pipeline rescore --rubric FILE …` (SPEC §5.7): the shell around engine/jury/rescore.ts. It
 * reads the edited rubrics and the recorded verdicts, and prints; it calls no provider and writes
 * nothing, so a user can try a rubric edit for free before paying for a new jury run.
 */
import path from 'node:path';
import { configValidators } from '../../config/config-schemas.js';
import { withRubricDefaults } from '../../config/load.js';
import type { JudgeStageDef, PromoteStageDef, Rubric } from '../../config/types.js';
import type { Engine } from '../../engine.js';
import type { Stored } from '../../store/types.js';
import { EXIT, PipelineError, type Issue } from '../../errors.js';
import { collectRecorded, replayRubric, type Flip, type OutcomeNames, type Recorded, type Replay } from '../../jury/rescore.js';
import { verdictField } from '../../stages/judge-config.js';
import { isObject } from '../../util/json-path.js';
import { listWords } from '../../util/suggest.js';
import { UsageError } from '../args.js';
import type { Context } from '../context.js';
import type { Unreadable } from '../../config/config-file.js';
import { readNamedFile } from '../../util/named-file.js';

/** Far past any rubric (a few hundred bytes of YAML). */
const RUBRIC_MAX_BYTES = 1024 * 1024;
import { malformedFileNote } from '../../outcome.js';

const USAGE = 'usage: pipeline rescore --rubric FILE [--rubric FILE …] [--json]';

interface EditedRubric {
  file: string;
  rubric: Rubric;
}

/** Read and validate every edited rubric; all issues of all files are collected before refusing. */
async function readRubrics(context: Context, files: readonly string[]): Promise<EditedRubric[]> {
  const validators = await configValidators();
  const { checkYamlFile } = await import('../../config/validate-file.js'); // the YAML parser: never loaded at start
  const issues: Issue[] = [];
  const rubrics: EditedRubric[] = [];
  for (const given of files) {
    const file = path.normalize(given);
    // A rubric is a few hundred bytes: a FIFO, a device or a file of hundreds of MB is refused, never waited on or read whole.
    const read = readNamedFile(path.resolve(context.io.cwd, given), RUBRIC_MAX_BYTES, { strict: true });
    const text: string | Unreadable = read.ok ? read.text : { error: read.why, ...(read.line !== undefined ? { line: read.line, col: read.col ?? 1 } : {}) };
    const checked = checkYamlFile<Rubric>(file, text, validators.rubric, context.io.env);
    issues.push(...checked.issues);
    if (checked.data && checked.issues.length === 0) rubrics.push({ file, rubric: withRubricDefaults(checked.data) });
  }
  const errors = issues.filter((issue) => issue.severity === 'error').length;
  if (errors) {
    throw new PipelineError('rescore.rubric_invalid', `invalid rubric (${errors} ${errors === 1 ? 'error' : 'errors'}); nothing was replayed`, {
      issues,
      hint: 'an edited rubric must pass the same checks as any rubric; fix it and run rescore again',
    });
  }
  return rubrics;
}

/** The judge stage whose decisions a rubric's replay speaks of: one that uses it, else the first. */
function judgeStageFor(engine: Engine, rubricId: string): JudgeStageDef {
  const judges = engine.pipeline.stages.filter((stage): stage is JudgeStageDef => stage.kind === 'judge');
  const stage = judges.find((judge) => Object.values(judge.rubric.map).includes(rubricId)) ?? judges[0];
  if (!stage) throw new PipelineError('rescore.no_judge', 'this pipeline has no judge stage: there are no jury decisions to replay');
  return stage;
}

/** The states a judge stage's pass and fail lead to (the names a replay's flips are given). */
function outcomeNames(engine: Engine, stage: JudgeStageDef): OutcomeNames {
  const target = (event: string) =>
    engine.pipeline.lifecycle.transitions.find((t) => t.from === stage.from && t.event === event && t.target !== undefined)?.target ?? event;
  return { pass: target(stage.events.pass), fail: target(stage.events.fail) };
}

/**
 * The ledgers the promote stages append verdict rows to (shipped: declined), with each row's id
 * field and the row field that holds the verdict (the one whose value is the verdict field).
 */
function juryLedgers(engine: Engine, verdictField: string): { ledger: string; key: string; field: string }[] {
  const promotes = engine.pipeline.stages.filter((stage): stage is PromoteStageDef => stage.kind === 'promote');
  const found = new Map<string, { key: string; field: string }>();
  for (const outcome of promotes.flatMap((stage) => Object.values(stage.outcomes))) {
    if (!outcome.append || !outcome.row || found.has(outcome.append)) continue;
    const field = Object.entries(outcome.row).find(([, expr]) => isObject(expr) && expr['$field'] === verdictField)?.[0];
    if (field) found.set(outcome.append, { key: outcome.key ?? 'id', field });
  }
  return [...found].map(([ledger, row]) => ({ ledger, ...row }));
}

/** Every recorded decision in the store, read through the store interface only. */
async function readRecorded(context: Context, engine: Engine, verdictField: string): Promise<Recorded> {
  const items: Stored[] = [];
  const malformed: string[] = [];
  for await (const listed of engine.store.list()) {
    if (listed.kind === 'found') items.push(listed.stored);
    else malformed.push(listed.id);
  }
  for (const id of malformed) context.out.warn(malformedFileNote(id));
  const ledgerRows: { id: unknown; verdict: unknown }[] = [];
  for (const { ledger, key, field } of juryLedgers(engine, verdictField)) {
    for await (const row of engine.store.ledger(ledger)) ledgerRows.push({ id: row[key], verdict: row[field] });
  }
  const recorded = collectRecorded({
    proposals: items.map((item) => ({ ...item.proposal, id: item.id })),
    verdictField,
    present: new Set([...items.map((item) => item.id), ...malformed]),
    ledgerRows,
  });
  for (const id of recorded.unreadable) context.out.warn(`${id}: the recorded verdict is not a verdict (hand-edited?) — not replayed`);
  return recorded;
}

const score = (value: number | null): string => (value === null ? '—' : value.toFixed(4));
const reasonOf = (reason: string, failed: string | null): string => (failed ? `${reason} (${failed})` : reason);
const plural = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`;

/** One summary line, then a table of the flips (stays are only counted). */
function renderReplay(file: string, replay: Replay, names: OutcomeNames, ledgerFiles: readonly string[]): string[] {
  const id = replay.rubric_id;
  const scope = replay.no_jury ? `; ${plural(replay.no_jury, 'no-jury proposal')} out of scope` : '';
  if (replay.considered === 0) {
    const elsewhere = replay.other_rubrics ? ` (${plural(replay.other_rubrics, 'panel was', 'panels were')} recorded under other rubric ids)` : '';
    return [`${file} (${id}): no recorded panels for rubric ${id}${elsewhere}${scope}`];
  }
  const { counts } = replay;
  const [down, up] = [`${names.pass}_to_${names.fail}`, `${names.fail}_to_${names.pass}`];
  const lines = [
    `${file} (${id}): ${plural(replay.considered, 'recorded panel')} — ${replay.stay} stay, ${counts[down]} ${names.pass} → ${names.fail}, ` +
      `${counts[up]} ${names.fail} → ${names.pass}, ${counts['judged_to_unjudged']} judged → unjudged${scope}`,
  ];
  const flips: Flip[] = [...(replay.flips[down] ?? []), ...(replay.flips[up] ?? []), ...(replay.flips['judged_to_unjudged'] ?? [])];
  if (flips.length === 0) return [...lines, '  no decision would change'];
  const rows = [
    ['ID', 'CHANGE', 'AGGREGATE', 'REASON'],
    ...flips.map((flip) => [
      `${flip.id}${flip.source === 'ledger' ? '*' : ''}`,
      `${flip.from} → ${flip.to}`,
      `${score(flip.old_aggregate)} → ${score(flip.new_aggregate)}`,
      `${reasonOf(flip.old_reason, flip.old_failed_criterion)} → ${reasonOf(flip.new_reason, flip.new_failed_criterion)}`,
    ]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  lines.push('', ...rows.map((row) => `  ${row.map((cell, column) => (column < 3 ? cell.padEnd(widths[column]!) : cell)).join('  ')}`.trimEnd()));
  if (flips.some((flip) => flip.source === 'ledger')) lines.push(`  * read from ${listWords(ledgerFiles)}: the proposal file is gone`);
  return lines;
}

export async function runRescore(context: Context): Promise<number> {
  const files = (context.parsed.values['rubric'] as string[] | undefined) ?? [];
  if (files.length === 0) throw new UsageError('rescore: --rubric FILE is required', USAGE);
  const edited = await readRubrics(context, files);
  const engine = await context.readEngine();
  for (const { file, rubric } of edited) {
    if (!engine.pipeline.rubrics.has(rubric.id)) {
      context.out.note(
        `note: ${file}: rubric id "${rubric.id}" is not one of this pipeline's rubrics (${listWords([...engine.pipeline.rubrics.keys()])}); panels are matched by id`,
      );
    }
  }
  // The names of the decisions and the field of the verdict come from the judge stage (SPEC §5.7).
  const byRubric = edited.map(({ file, rubric }) => ({ file, rubric, stage: judgeStageFor(engine, rubric.id) }));
  const recordedBy = new Map<string, Recorded>();
  const reports = [];
  for (const { file, rubric, stage } of byRubric) {
    const field = verdictField(stage);
    if (!recordedBy.has(field)) recordedBy.set(field, await readRecorded(context, engine, field));
    const names = outcomeNames(engine, stage);
    reports.push({ report: { file, ...replayRubric(rubric, recordedBy.get(field)!, names) }, names, field });
  }
  if (context.json) {
    context.out.data({ rubrics: reports.map(({ report }) => report) });
    return EXIT.ok;
  }
  reports.forEach(({ report, names, field }, index) => {
    if (index > 0) context.out.line();
    const ledgerFiles = juryLedgers(engine, field).map(({ ledger }) => engine.pipeline.ledgers[ledger] ?? ledger);
    for (const line of renderReplay(report.file, report, names, ledgerFiles)) context.out.line(line);
  });
  return EXIT.ok;
}
