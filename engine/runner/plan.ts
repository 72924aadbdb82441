/**
 * What a batch would do, stated before anything is spent (SPEC §5.4): how many proposals, per
 * rubric and with no jury, and how many model calls to paid providers. Pure over its inputs.
 */
export interface BatchPlan {
  stage: string;
  items: number;
  /** Rubric id (or "no jury: <reason>") → proposals. */
  groups: Record<string, number>;
  calls: number;
  paidCalls: number;
  paidProviders: string[];
  refused: number;
}

export function emptyPlan(stage: string): BatchPlan {
  return { stage, items: 0, groups: {}, calls: 0, paidCalls: 0, paidProviders: [], refused: 0 };
}

export function planLines(plan: BatchPlan, noun: string): string[] {
  const groups = Object.entries(plan.groups).map(([group, n]) => `${n} ${group}`);
  return [
    `${plan.stage}: ${plan.items} ${noun}${plan.items === 1 ? '' : 's'}${groups.length ? ` (${groups.join(', ')})` : ''}`,
    `  ${plan.calls} model call${plan.calls === 1 ? '' : 's'}, ${plan.paidCalls} to paid providers${plan.paidProviders.length ? ` (${plan.paidProviders.join(', ')})` : ''}; answers already cached are not paid again`,
    ...(plan.refused ? [`  ${plan.refused} would be refused`] : []),
  ];
}
