import { PipelineError } from '../../errors.js';
import type { Context } from '../context.js';

export async function runJudge(context: Context): Promise<number> {
  void context;
  throw new PipelineError('not_implemented', 'judge is not implemented yet');
}
