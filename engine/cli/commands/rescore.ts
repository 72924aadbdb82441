import { PipelineError } from '../../errors.js';
import type { Context } from '../context.js';

export async function runRescore(context: Context): Promise<number> {
  void context;
  throw new PipelineError('not_implemented', 'rescore is not implemented yet');
}
