/**
 * What a batch would do, stated before anything is spent (SPEC §5.4): how many units, per rubric
 * and with no jury, and how many model calls to paid providers. Pure over its inputs.
 */
export interface BatchPlan {
  stage: string;
  items: number;
  /** Rubric id (or "no jury (<reason>)") → units. */
  groups: Record<string, number>;
  calls: number;
  paidCalls: number;
  paidProviders: string[];
  refused: number;
}

/** What a provider seat costs, as far as a plan is concerned. */
export interface SeatCost {
  name: string;
  paid: boolean;
  /** Deterministic providers make no model call. */
  deterministic: boolean;
}

/** One unit as the plan sees it. */
export type ItemPlan = { kind: 'refused' } | { kind: 'no_jury'; reason: string } | { kind: 'jury'; rubric: string; seats: readonly SeatCost[] };

export function emptyPlan(stage: string): BatchPlan {
  return { stage, items: 0, groups: {}, calls: 0, paidCalls: 0, paidProviders: [], refused: 0 };
}

/** The plan of a judge batch: units per rubric (and per no-jury reason), model calls, paid calls. */
export function judgeBatchPlan(stage: string, items: readonly ItemPlan[]): BatchPlan {
  const plan = emptyPlan(stage);
  const paid = new Set<string>();
  for (const item of items) {
    plan.items++;
    if (item.kind === 'refused') {
      plan.refused++;
      continue;
    }
    const group = item.kind === 'no_jury' ? `no jury (${item.reason})` : item.rubric;
    plan.groups[group] = (plan.groups[group] ?? 0) + 1;
    if (item.kind === 'no_jury') continue;
    for (const seat of item.seats) {
      if (seat.deterministic) continue;
      plan.calls++;
      if (seat.paid) {
        plan.paidCalls++;
        paid.add(seat.name);
      }
    }
  }
  plan.paidProviders = [...paid];
  return plan;
}

/** The plan of a batch where every unit makes one call to one provider (a transform). */
export function singleCallPlan(stage: string, units: number, provider: SeatCost): BatchPlan {
  return {
    ...emptyPlan(stage),
    items: units,
    calls: provider.deterministic ? 0 : units,
    paidCalls: provider.paid ? units : 0,
    paidProviders: provider.paid ? [provider.name] : [],
  };
}

export function planLines(plan: BatchPlan, noun: string): string[] {
  const groups = Object.entries(plan.groups).map(([group, n]) => `${n} ${group}`);
  return [
    `${plan.stage}: ${plan.items} ${noun}${plan.items === 1 ? '' : 's'}${groups.length ? ` (${groups.join(', ')})` : ''}`,
    `  ${plan.calls} model call${plan.calls === 1 ? '' : 's'}, ${plan.paidCalls} to paid providers${plan.paidProviders.length ? ` (${plan.paidProviders.join(', ')})` : ''}; answers already cached are not paid again`,
    ...(plan.refused ? [`  ${plan.refused} would be refused`] : []),
  ];
}
