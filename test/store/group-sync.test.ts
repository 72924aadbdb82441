/** Group commit: concurrent durability requests share syncs, and none is answered by a sync that started before it. */
import { describe, expect, it } from 'vitest';
import { GroupSync } from '../../engine/util/atomic-write.js';

describe('GroupSync', () => {
  it('shares one sync among the requests made while another runs, and never answers early', async () => {
    const started: number[] = [];
    let clock = 0;
    const group = new GroupSync(async () => {
      started.push(clock);
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    const requests: { madeAt: number; answeredAfterSyncStartedAt?: number }[] = [];
    const ask = async () => {
      const request: (typeof requests)[number] = { madeAt: clock++ };
      requests.push(request);
      await group.request();
      request.answeredAfterSyncStartedAt = started[started.length - 1];
    };
    const first = ask();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const waiting = Array.from({ length: 10 }, () => ask());
    await Promise.all([first, ...waiting]);
    expect(started).toHaveLength(2);
    for (const request of requests) expect(request.answeredAfterSyncStartedAt!).toBeGreaterThanOrEqual(request.madeAt);
  });

  it('runs a sync per request when they do not overlap', async () => {
    let syncs = 0;
    const group = new GroupSync(async () => {
      syncs++;
    });
    await group.request();
    await group.request();
    expect(syncs).toBe(2);
  });

  it('syncs through the descriptor of the request that starts the sync, while that request still waits', async () => {
    const used: (number | undefined)[] = [];
    const waiting = new Set<number>();
    const group = new GroupSync(async (fd) => {
      used.push(fd);
      // The request whose descriptor this sync uses has not been answered: it keeps it open.
      if (fd !== undefined) expect(waiting.has(fd)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 10));
    });
    const ask = async (fd?: number) => {
      if (fd !== undefined) waiting.add(fd);
      await group.request(fd);
      if (fd !== undefined) waiting.delete(fd);
    };
    const first = ask(3);
    const later = [ask(7), ask(8), ask()];
    await Promise.all([first, ...later]);
    await ask();
    expect(used).toEqual([3, 7, undefined]);
  });
});
