import { PipelineError } from '../../errors.js';
import type { Context } from '../context.js';

export async function runViz(context: Context): Promise<number> {
  void context;
  throw new PipelineError('not_implemented', 'viz is not implemented yet');
}
