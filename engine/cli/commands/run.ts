import { PipelineError } from '../../errors.js';
import type { Context } from '../context.js';

export async function runRun(context: Context): Promise<number> {
  void context;
  throw new PipelineError('not_implemented', 'run is not implemented yet');
}
