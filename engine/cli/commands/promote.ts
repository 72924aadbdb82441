import { PipelineError } from '../../errors.js';
import type { Context } from '../context.js';

export async function runPromote(context: Context): Promise<number> {
  void context;
  throw new PipelineError('not_implemented', 'promote is not implemented yet');
}
