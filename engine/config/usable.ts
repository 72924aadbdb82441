/**
 * Configuration that validates but could never run is an error too (SPEC §2), found at load
 * rather than by every run failing the same way:
 *
 * - a rubric criterion no seat of its panel can ever score, when the gate needs it: every
 *   proposal under that rubric would be "could not be judged" forever. Deterministic `checks`
 *   judges score exactly the criteria they declare; a model may score any. A floored criterion
 *   nobody can score, or a panel whose scorable weight is below `min_criterion_coverage`, is an
 *   error; a criterion nobody can score that the gate does not need is a warning (it never counts);
 * - a stage pointed at a provider whose key variable (`api_key_env`) is unset: every call would
 *   be an outage.
 *
 * And the converse: a provider no stage uses may hold an unset `${VAR}` (a warning, and the
 * provider is left out) — it must not stop every command. Pure: the environment comes in.
 */
import path from 'node:path';
import { isMap, parseDocument } from 'yaml';
import type { Issue } from '../errors.js';
import { TOLERANCE } from '../jury/gate.js';
import { didYouMean, listWords } from '../util/suggest.js';
import { interpolate, type Env } from './interpolate.js';
import type { Sources } from './load.js';
import { isSet } from './cache.js';
import { PIPELINE_FILE } from './locate.js';
import type { Unreadable } from './config-file.js';
import type { ConfigTexts } from './read.js';
import { issueAt, writtenText } from './source.js';
import type { JudgeStageDef, PipelineDef, ProviderDef, Rubric, StageDef } from './types.js';

interface Context {
  def: PipelineDef;
  stages: StageDef[];
  rubrics: Map<string, Rubric>;
  sources: Sources;
  env: Env;
}

/** The criteria a provider can score: a checks judge its declared ones, a model any (undefined). */
function scorable(provider: ProviderDef | undefined): Set<string> | undefined {
  if (provider?.kind !== 'checks') return undefined;
  const criteria = provider['criteria'];
  return new Set(criteria && typeof criteria === 'object' ? Object.keys(criteria) : []);
}

/** The variable a provider reads its key from, when it needs one. */
export function keyVariable(provider: ProviderDef | undefined): string | undefined {
  if (provider?.kind === 'anthropic') return typeof provider['api_key_env'] === 'string' ? provider['api_key_env'] : 'ANTHROPIC_API_KEY';
  if (provider?.kind === 'openai' && typeof provider['api_key_env'] === 'string') return provider['api_key_env'];
  return undefined;
}

/** Every provider a stage calls, with the place in its file that names it. */
interface ProviderUse {
  stage: StageDef;
  path: string[];
  provider: string;
  role: string;
}

function providerUses(stages: readonly StageDef[]): ProviderUse[] {
  return stages.flatMap((stage): ProviderUse[] => {
    if (stage.kind === 'transform') return [{ stage, path: ['provider'], provider: stage.provider, role: 'its transformer' }];
    if (stage.kind !== 'judge') return [];
    return Object.entries(stage.judges).map(([seat, provider]) => ({ stage, path: ['judges', seat], provider, role: `judge type ${seat}` }));
  });
}

/** The key variables the stages' providers read (their being set is part of what makes the configuration valid). */
export function keyVariablesInUse(def: PipelineDef, stages: readonly StageDef[]): string[] {
  return [...new Set(providerUses(stages).flatMap((use) => keyVariable(def.providers?.[use.provider]) ?? []))].sort();
}

export function checkUsable(context: Context): Issue[] {
  return [...checkKeys(context), ...checkCriteria(context)];
}

function checkKeys({ def, stages, sources, env }: Context): Issue[] {
  const issues: Issue[] = [];
  for (const use of providerUses(stages)) {
    const variable = keyVariable(def.providers?.[use.provider]);
    const source = sources.stages.get(use.stage.name);
    if (variable === undefined || isSet(env, variable) || !source) continue;
    issues.push(
      issueAt(
        source,
        use.path,
        'config.key_unset',
        `${use.role} uses provider "${use.provider}", whose key variable ${variable} is not set: every call would fail`,
        `set ${variable} (api_key_env of "${use.provider}" in ${PIPELINE_FILE}), or point ${use.role.replace(/^its /, 'the ')} at another provider`,
      ),
    );
  }
  return issues;
}

function checkCriteria({ def, stages, rubrics, sources }: Context): Issue[] {
  const issues: Issue[] = [];
  const reported = new Set<string>();
  for (const stage of stages) {
    if (stage.kind !== 'judge') continue;
    for (const target of new Set(Object.values(stage.rubric.map).filter((value): value is string => typeof value === 'string'))) {
      const rubric = rubrics.get(target);
      const source = rubric ? sources.rubrics.get(rubric.id) : undefined;
      if (!rubric || !source) continue;
      for (const issue of checkPanel(def, stage, rubric)) {
        const key = `${issue.path.join('.')}\u0000${issue.message}`;
        if (reported.has(key)) continue;
        reported.add(key);
        const written = (path: string[]) => writtenText(source, path);
        const placed = issueAt(source, issue.path, issue.code, issue.message(written), issue.hint);
        issues.push(issue.warning ? { ...placed, severity: 'warning' } : placed);
      }
    }
  }
  return issues;
}

interface PanelIssue {
  path: string[];
  code: string;
  /** Worded with numbers as written in the file. */
  message: (written: (path: string[]) => string | undefined) => string;
  hint?: string;
  warning?: boolean;
}

/** What a rubric's panel, as this stage seats it, can never score. */
function checkPanel(def: PipelineDef, stage: JudgeStageDef, rubric: Rubric): PanelIssue[] {
  const seats = rubric.judge_types.flatMap((seat) => {
    const provider = stage.judges[seat];
    return provider === undefined ? [] : [{ seat, provider, can: scorable(def.providers?.[provider]) }];
  });
  if (seats.length === 0 || seats.some((seat) => seat.can === undefined)) return []; // a model can score anything
  const union = new Set(seats.flatMap((seat) => [...seat.can!]));
  const who = listWords(
    seats.map((seat) => `${seat.seat} → ${seat.provider}`),
    'and',
  );
  const panel = `${who} (${stage.file}) score only ${listWords([...union].sort(), 'and') || 'nothing'}`;
  const forever = `every proposal judged under ${rubric.id} would be left unjudged`;
  const out: PanelIssue[] = [];
  let scoredWeight = 0;
  rubric.criteria.forEach((criterion, index) => {
    if (union.has(criterion.name)) {
      scoredWeight += criterion.weight;
      return;
    }
    const hint = didYouMean(criterion.name, union) ?? 'declare the criterion in a checks provider of the panel, or seat a model that scores it';
    if (criterion.min_pass !== undefined) {
      out.push({
        path: ['criteria', String(index), 'name'],
        code: 'config.criterion_unscorable',
        message: (written) => {
          const floor = written(['criteria', String(index), 'min_pass']) ?? criterion.min_pass;
          return `criterion "${criterion.name}" has a floor (min_pass ${floor}), but no judge can score it: ${panel}; ${forever}`;
        },
        hint,
      });
    } else {
      const message = () => `criterion "${criterion.name}" is scored by no judge (${panel}), so it never counts`;
      out.push({ path: ['criteria', String(index), 'name'], code: 'config.criterion_unscored', message, hint, warning: true });
    }
  });
  if (scoredWeight < rubric.min_criterion_coverage - TOLERANCE) {
    const weight = Math.round(scoredWeight * 1e6) / 1e6;
    out.push({
      path: ['min_criterion_coverage'],
      code: 'config.coverage_unreachable',
      message: (written) => {
        const minimum = written(['min_criterion_coverage']) ?? rubric.min_criterion_coverage;
        return `the judges can score criteria worth ${weight} of the weight, below min_criterion_coverage ${minimum}: ${panel}; ${forever}`;
      },
      hint: 'score more of the criteria, or lower min_criterion_coverage',
    });
  }
  return out;
}

/**
 * The providers the stage files name, read before pipeline.yaml is validated (to decide whether
 * an unset variable in a provider matters). Undefined when that cannot be told: then every
 * provider counts as used, and an unset variable is an error as before.
 */
export function providersNamedByStages(texts: ConfigTexts, env: Env): Set<string> | undefined {
  const data = parsed(texts.get(PIPELINE_FILE));
  const files = data?.['stages'];
  if (!Array.isArray(files)) return undefined;
  const used = new Set<string>();
  for (const file of files) {
    if (typeof file !== 'string') return undefined;
    let name: string;
    try {
      name = interpolate(file, env);
    } catch {
      return undefined;
    }
    const stage = parsed(texts.get(path.normalize(name)));
    if (!stage) return undefined;
    const named = [stage['provider'], ...(stage['judges'] && typeof stage['judges'] === 'object' ? Object.values(stage['judges']) : [])];
    for (const value of named) {
      if (typeof value !== 'string') continue;
      try {
        used.add(interpolate(value, env));
      } catch {
        return undefined;
      }
    }
  }
  return used;
}

function parsed(text: string | Unreadable | undefined): Record<string, unknown> | undefined {
  if (typeof text !== 'string') return undefined;
  const doc = parseDocument(text);
  if (doc.errors.length || !isMap(doc.contents)) return undefined;
  try {
    return doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** For pipeline.yaml: an unset variable inside a provider no stage uses leaves that provider out, with a warning. */
export function unusedProviderTolerance(texts: ConfigTexts, env: Env): (at: readonly string[]) => { drop: string[]; why: string } | undefined {
  let used: Set<string> | undefined | null = null;
  return (at) => {
    const name = at[1];
    if (at[0] !== 'providers' || name === undefined) return undefined;
    if (used === null) used = providersNamedByStages(texts, env);
    if (used === undefined || used.has(name)) return undefined;
    return { drop: ['providers', name], why: `(in provider "${name}", which no stage uses: it is left out until the variable is set)` };
  };
}
