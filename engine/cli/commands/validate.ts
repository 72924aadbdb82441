/** `pipeline validate`: every check, no cache; `ok` and what was loaded, or every issue. */
import { EXIT, formatIssue } from '../../errors.js';
import type { Context } from '../context.js';

export async function runValidate(context: Context): Promise<number> {
  const dir = context.pipelineDir();
  // The YAML parser and ajv load only here (and on a configuration cache miss), never at start.
  const { buildFromDir } = await import('../../config/build.js');
  const { pipeline, issues } = await buildFromDir(dir, context.io.env);
  const errors = issues.filter((issue) => issue.severity === 'error');
  const warnings = issues.filter((issue) => issue.severity === 'warning');
  if (context.json) {
    context.out.data({
      ok: errors.length === 0,
      issues: issues.map((issue) => ({ ...issue, text: formatIssue(issue) })),
      ...(pipeline ? { files: pipeline.files } : {}),
    });
  } else {
    for (const issue of [...errors, ...warnings]) context.out.issue(issue);
  }
  if (!pipeline || errors.length) {
    if (!context.json) context.out.error(`invalid configuration (${errors.length} ${errors.length === 1 ? 'error' : 'errors'}) in ${dir}`);
    return EXIT.refused;
  }
  if (!context.json) {
    const { lifecycle, stages, rubrics, schemas, def } = pipeline;
    context.out.line(`ok ${def.name} (${dir})`);
    context.out.line(`  machine   ${lifecycle.def.id}: ${lifecycle.states.length} states (${lifecycle.states.join(', ')}), ${lifecycle.events.length} events`);
    context.out.line(`  stages    ${stages.map((stage) => `${stage.name} (${stage.kind})`).join(', ')}`);
    context.out.line(`  rubrics   ${[...rubrics.keys()].join(', ') || 'none'}`);
    context.out.line(`  schemas   ${schemas.names().join(', ') || 'none'}`);
    context.out.line(
      `  providers ${
        Object.entries(def.providers ?? {})
          .map(([name, provider]) => `${name} (${provider.kind})`)
          .join(', ') || 'none'
      }`,
    );
    context.out.line(`  files     ${pipeline.files.length} read`);
  }
  return EXIT.ok;
}
