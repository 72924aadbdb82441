/**
 * Turning measurements into the table `npm run bench` prints and the verdict on each SPEC §9
 * target. The reference figures are the bash + jq implementation's, per SPEC §9.
 */
export const REFERENCE = { confirm: 34, judge: 79, promote: 116, list1000Json: 25_000 };

/** SPEC §9's speed target: the reference ÷ the measured time per proposal, at least this. */
const RATIO_TARGET = 100;
/** The sizes every reference ratio is measured at. */
const RATIO_SIZES = [1000, 10_000];

/** "Memory flat in N": the peak RSS at the largest N within this factor of the smallest. */
const FLAT = 1.5;

const ms = (value) => (value === undefined || value === null ? '—' : value >= 100 ? `${Math.round(value)} ms` : `${value.toFixed(2)} ms`);
const mb = (kb) => (kb ? `${Math.round(kb / 1024)} MB` : '—');
const times = (value) => `${value >= 10 ? Math.round(value) : value.toFixed(1)}×`;

function table(title, header, rows) {
  const widths = header.map((_, i) => Math.max(header[i].length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join('  ');
  return [`\n${title}`, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Per-proposal figures of one lifecycle run (ms per proposal). */
export function perProposal(run) {
  const half = Math.floor(run.n / 2);
  const each = (name, count) => run.ms[name] / count;
  const judge = each('judge', run.n);
  const promote = each('promote', run.n);
  return {
    n: run.n,
    propose: each('propose', run.n),
    confirmSequential: each('confirm_sequential', half),
    confirmParallel8: each('confirm_parallel8', run.n - half),
    judge,
    promote,
    judgePlusPromote: judge + promote,
    maxRssKb: run.maxRssKb,
  };
}

/**
 * The reference ratios — reference ÷ measured, per proposal — of judge + promote, confirm (8 at a
 * time and one by one) and listing (first, with no index, and warm) at N = 1,000 and 10,000.
 * A size not measured in this run is null.
 */
export function referenceRatios(results) {
  const perProposalAt = (n) => (results.perProposal ?? []).find((row) => row.n === n);
  const listAt = (n) => (results.list ?? []).find((row) => row.size === n);
  const listPer = (key) => (n) => {
    const row = listAt(n);
    return row ? row[key].medianMs / n : undefined;
  };
  const batchAt = (n) => (results.batch ?? []).find((row) => row.n === n)?.medianPerProposalMs;
  const rows = [
    { what: 'judge + promote: run judge --yes', reference: REFERENCE.judge + REFERENCE.promote, at: batchAt },
    { what: 'judge ×8, then promote ×8 (API)', reference: REFERENCE.judge + REFERENCE.promote, at: (n) => perProposalAt(n)?.judgePlusPromote },
    { what: 'confirm (8 at a time)', reference: REFERENCE.confirm, at: (n) => perProposalAt(n)?.confirmParallel8 },
    { what: 'confirm (one by one)', reference: REFERENCE.confirm, at: (n) => perProposalAt(n)?.confirmSequential },
    { what: 'list --json, first (no index)', reference: REFERENCE.list1000Json / 1000, at: listPer('first') },
    { what: 'list --json, warm', reference: REFERENCE.list1000Json / 1000, at: listPer('warm') },
  ];
  return rows.map(({ what, reference, at }) => {
    const sizes = RATIO_SIZES.map((n) => {
      const measured = at(n);
      return measured === undefined ? { n, ms: null, ratio: null } : { n, ms: measured, ratio: reference / measured };
    });
    const measuredAll = sizes.every((size) => size.ratio !== null);
    return { what, referenceMs: reference, sizes, met: measuredAll ? sizes.every((size) => size.ratio >= RATIO_TARGET) : null };
  });
}

/** Every §9 target with its measurement and whether it is met. */
export function targets(results) {
  const out = [];
  const add = (target, measured, goal, met) => out.push({ target, measured, goal, met });
  for (const row of referenceRatios(results)) {
    for (const size of row.sizes) {
      if (size.ratio === null) continue;
      add(
        `${row.what}, N=${size.n}`,
        `${ms(size.ms)} = ${times(size.ratio)} faster`,
        `≥ ${RATIO_TARGET}× (≤ ${ms(row.referenceMs / RATIO_TARGET)})`,
        size.ratio >= RATIO_TARGET,
      );
    }
  }
  for (const store of results.stores ?? []) {
    if (store.size !== 100_000) continue;
    for (const [name, key] of [
      ['status', 'statusWarm'],
      ['status, first run (builds the index)', 'statusFirst'],
      ['list --state confirmed', 'listWarm'],
      ['list --state confirmed, first run', 'listFirst'],
    ]) {
      add(`${name}, 100,000 proposals`, ms(store[key].medianMs), '< 1 s', store[key].medianMs < 1000);
    }
  }
  for (const pool of results.pool ?? []) {
    const at = `${pool.size.toLocaleString('en')} in use`;
    add(`pool top, warm, ${at}`, ms(pool.topWarm.medianMs), '< 500 ms', pool.topWarm.medianMs < 500);
    add(`pool top right after 5 outcomes, ${at}`, ms(pool.topAfterOutcomes.medianMs), '< 500 ms', pool.topAfterOutcomes.medianMs < 500);
    add(`pool outcome, ${at}`, ms(pool.outcome.medianMs), '< 300 ms', pool.outcome.medianMs < 300);
  }
  const small = results.stores?.find((store) => store.size === 1000);
  if (small)
    add(
      'list 1,000 confirmed as JSON',
      `${ms(small.listWarm.medianMs)} = ${times(REFERENCE.list1000Json / small.listWarm.medianMs)} faster`,
      'faster than 25 s',
      small.listWarm.medianMs < REFERENCE.list1000Json,
    );
  if (results.coldStart) {
    add('cold start: status, small store', ms(results.coldStart.status.medianMs), '< 250 ms', results.coldStart.status.medianMs < 250);
    add(
      'cold start: status, no config cache yet',
      ms(results.coldStart.statusNoConfigCache.medianMs),
      '< 250 ms',
      results.coldStart.statusNoConfigCache.medianMs < 250,
    );
  }
  for (const run of results.latency ?? []) {
    add(
      `efficiency C=${run.c} (N=${run.n}, L=${run.latencyMs} ms, ${run.mode})`,
      `wall ${ms(run.wallMs)} = ${run.ratio.toFixed(2)} × ideal${run.runs?.length > 1 ? ` (median of ${run.runs.join(', ')})` : ''}`,
      '≤ 1.10 × ideal',
      run.ratio <= 1.1,
    );
  }
  if (results.postgres) {
    const pg = results.postgres;
    const file = pg.throughput.find((row) => row.store === 'file');
    const four = pg.throughput.find((row) => row.store === 'postgres' && row.workers === 4);
    if (file && four)
      add(
        'PostgreSQL: 4 workers vs 1 process on files (proposals/s)',
        `${four.perSecond.toFixed(0)} vs ${file.perSecond.toFixed(0)}`,
        '≥ the file store',
        four.perSecond >= file.perSecond,
      );
    for (const run of pg.latency)
      add(
        `PostgreSQL: W=${run.workers} × C=${run.concurrency}, L=${run.latencyMs} ms, N=${run.n}`,
        `wall ${ms(run.wallMs)} = ${run.ratio.toFixed(2)} × N·L/(W·C)`,
        '≤ 1.10 ×',
        run.ratio <= 1.1,
      );
    if (pg.size) {
      const label = `${pg.size.proposals.toLocaleString('en-US')} proposals`;
      add(`PostgreSQL: status, ${label}`, ms(pg.size.statusMs), '< 1 s', pg.size.statusMs < 1000);
      add(`PostgreSQL: list --state confirmed, ${label}`, ms(pg.size.listConfirmedMs), '< 1 s', pg.size.listConfirmedMs < 1000);
    }
  }
  const flat = (name, values) => {
    const known = values.filter((value) => value.rss);
    if (known.length < 2) return;
    const first = known[0];
    const last = known[known.length - 1];
    add(`memory flat in N: ${name}`, `${mb(first.rss)} at N=${first.n} → ${mb(last.rss)} at N=${last.n}`, `≤ ${FLAT}×`, last.rss / first.rss <= FLAT);
  };
  flat(
    'lifecycle (one process)',
    (results.perProposal ?? []).map((row) => ({ n: row.n, rss: row.maxRssKb })),
  );
  for (const key of ['statusWarm', 'statusFirst', 'listWarm', 'listFirst', 'reviewOne', 'runPromoteIdle'])
    flat(
      key,
      (results.stores ?? []).map((store) => ({ n: store.size, rss: store[key]?.maxRssKb })),
    );
  // A run's memory at one concurrency and latency, its N 10× larger (not across concurrencies:
  // 32 proposals in flight hold more than 1, whatever N is).
  flat(
    'judge run at fixed latency (C=32, L=100 ms)',
    (results.latency ?? [])
      .filter((run) => run.mode === 'promote' && run.latencyMs === 100 && run.c === 32)
      .sort((a, b) => a.n - b.n)
      .map((run) => ({ n: run.n, rss: run.maxRssKb })),
  );
  return out;
}

export function renderTables(results, verdicts) {
  const parts = [];
  if (results.machine?.disk?.length) {
    parts.push(
      table(
        "The machine now: the disk under the bench's temp dir and the CPU (bench/lib/disk.js); every figure follows them",
        ['when', 'create a file', '4 KiB write + fsync', 'CPU: JSON + sha-256 of 2 KiB'],
        results.machine.disk.map((probe, i) => [
          i === 0 ? `before (${probe.at.slice(11, 16)} UTC)` : `after (${probe.at.slice(11, 16)} UTC)`,
          `${probe.createUs} µs`,
          `${probe.fsyncUs} µs`,
          probe.cpuUs === undefined ? '—' : `${probe.cpuUs} µs`,
        ]),
      ),
    );
  }
  const ratios = referenceRatios(results);
  if (ratios.some((row) => row.sizes.some((size) => size.ratio !== null))) {
    const cells = (size) => (size.ratio === null ? ['—', '—'] : [ms(size.ms), times(size.ratio)]);
    parts.push(
      table(
        `Reference ratios: reference ÷ measured, per proposal (SPEC §9); target ≥ ${RATIO_TARGET}× at N = 1,000 and 10,000`,
        ['', 'reference', ...RATIO_SIZES.flatMap((n) => [`N=${n.toLocaleString('en')}`, 'ratio']), `≥ ${RATIO_TARGET}×`],
        ratios.map((row) => [row.what, ms(row.referenceMs), ...row.sizes.flatMap(cells), row.met === null ? 'not measured' : row.met ? 'met' : 'NOT MET']),
      ),
    );
  }
  if (results.batch?.length) {
    const each = (row, pick) => row.runs.map(pick).join(' / ');
    parts.push(
      table(
        "judge + promote as users run it: the binary's `run judge --yes` on N confirmed proposals, fresh store each run, start-up included",
        ['N', 'median per proposal', 'each run', 'user s', 'system s', 'peak RSS'],
        results.batch.map((row) => [
          row.n,
          ms(row.medianPerProposalMs),
          each(row, (run) => ms(run.perProposalMs)),
          each(row, (run) => run.userS ?? '—'),
          each(row, (run) => run.sysS ?? '—'),
          each(row, (run) => mb(run.maxRssKb)),
        ]),
      ),
    );
  }
  if (results.perProposal?.length) {
    parts.push(
      table(
        'Per proposal, engine API, real FileStore (fsync on), ms per proposal',
        ['N', 'propose', 'confirm 1-by-1', 'confirm ×8', 'judge ×8', 'promote ×8', 'judge+promote', 'peak RSS'],
        results.perProposal.map((row) => [
          row.n,
          ms(row.propose),
          ms(row.confirmSequential),
          ms(row.confirmParallel8),
          ms(row.judge),
          ms(row.promote),
          ms(row.judgePlusPromote),
          mb(row.maxRssKb),
        ]),
      ),
    );
    const ref = results.perProposal.map((row) => [
      row.n,
      times(REFERENCE.confirm / row.confirmParallel8),
      times(REFERENCE.confirm / row.confirmSequential),
      times(REFERENCE.judge / row.judge),
      times(REFERENCE.promote / row.promote),
      times((REFERENCE.judge + REFERENCE.promote) / row.judgePlusPromote),
    ]);
    parts.push(
      table(
        'Speed-up over the reference (confirm 34 ms, judge 79 ms, promote 116 ms); target ≥ 100×',
        ['N', 'confirm ×8', 'confirm 1-by-1', 'judge', 'promote', 'judge+promote'],
        ref,
      ),
    );
  }
  if (results.stores?.length) {
    const cell = (timing) => (timing ? `${ms(timing.medianMs)} / ${mb(timing.maxRssKb)}` : '—');
    parts.push(
      table(
        'The real binary, one process per run (median; peak RSS)',
        ['proposals', 'status first', 'status warm', 'list first', 'list warm', 'unconfirm one', 'run promote (idle)'],
        results.stores.map((store) => [
          store.size,
          cell(store.statusFirst),
          cell(store.statusWarm),
          cell(store.listFirst),
          cell(store.listWarm),
          cell(store.reviewOne),
          cell(store.runPromoteIdle),
        ]),
      ),
    );
  }
  if (results.pool?.length) {
    const cell = (timing) => (timing ? `${ms(timing.medianMs)} / ${mb(timing.maxRssKb)}` : '—');
    const header = ['in use', 'top first', 'top warm', 'top --file --task', 'outcome', 'top after outcomes', 'prune (dry run)', 'outcome, pool of 20'];
    const row = (pool) => [pool.size, cell(pool.topFirst), cell(pool.topWarm), cell(pool.topWarmFileTask), cell(pool.outcome), cell(pool.topAfterOutcomes)];
    parts.push(
      table(
        'The pool in use, the real binary (median; peak RSS)',
        header,
        results.pool.map((pool) => [...row(pool), cell(pool.pruneDry), cell(pool.outcomeSmallStore)]),
      ),
    );
  }
  if (results.coldStart) {
    const cold = results.coldStart;
    parts.push(
      table(
        'Cold start (median of a new process each run)',
        ['command', 'median', 'runs', 'peak RSS'],
        [
          ['status, small store', ms(cold.status.medianMs), cold.status.runs.length, mb(cold.status.maxRssKb)],
          ['status, no config cache', ms(cold.statusNoConfigCache.medianMs), cold.statusNoConfigCache.runs.length, mb(cold.statusNoConfigCache.maxRssKb)],
          ['--version', ms(cold.version.medianMs), cold.version.runs.length, mb(cold.version.maxRssKb)],
          ...(cold.statusCallerEnv
            ? [
                [
                  `status, the caller's environment (${cold.statusCallerEnv.dropped.join(', ') || 'no NODE_ variable'})`,
                  ms(cold.statusCallerEnv.medianMs),
                  cold.statusCallerEnv.runs.length,
                  mb(cold.statusCallerEnv.maxRssKb),
                ],
              ]
            : []),
        ],
      ),
    );
  }
  if (results.latency?.length) {
    parts.push(
      table(
        "Judges of fixed latency: ideal = ceil(N/C) × L (the panel's 2 calls run in parallel)",
        [
          'C',
          'N',
          'L',
          'mode',
          'calls',
          'max in flight',
          'wall',
          'ideal',
          'wall/ideal',
          'runs',
          'within 10 %',
          'CPU/proposal',
          'event loop',
          'server',
          'first call',
          'answer → next call (mean / p90)',
          'peak RSS',
        ],
        results.latency.map((run) => [
          run.c,
          run.n,
          ms(run.latencyMs),
          run.mode,
          run.requests,
          run.maxInFlight,
          ms(run.wallMs),
          ms(run.idealMs),
          run.ratio.toFixed(2),
          run.runs?.length > 1 ? run.runs.map((ratio) => ratio.toFixed(2)).join(' ') : '—',
          run.ratio <= 1.1 ? 'yes' : 'NO',
          run.cpuMsPerProposal === undefined ? '—' : ms(run.cpuMsPerProposal),
          run.mainCpuMsPerProposal === undefined ? '—' : ms(run.mainCpuMsPerProposal),
          run.serverCpuMsPerProposal === undefined ? '—' : ms(run.serverCpuMsPerProposal),
          run.firstRequestMs === undefined ? '—' : ms(run.firstRequestMs),
          run.turnaroundMs?.count ? `${ms(run.turnaroundMs.mean)} / ${ms(run.turnaroundMs.p90)}` : '—',
          mb(run.maxRssKb),
        ]),
      ),
    );
  }
  if (results.postgres) {
    const pg = results.postgres;
    parts.push(
      table(
        'PostgreSQL: judge + promote with instant offline judges (real binaries, one database)',
        ['store', 'workers', 'N', 'wall', 'proposals/s'],
        pg.throughput.map((row) => [row.store, row.workers, row.n, ms(row.wallMs), row.perSecond.toFixed(0)]),
      ),
    );
    parts.push(
      table(
        'PostgreSQL: judges of fixed latency, ideal = N·L/(W·C)',
        ['workers', 'C', 'N', 'L', 'wall', 'ideal', 'wall/ideal'],
        pg.latency.map((run) => [run.workers, run.concurrency, run.n, ms(run.latencyMs), ms(run.wallMs), ms(run.idealMs), run.ratio.toFixed(2)]),
      ),
    );
  }
  parts.push(
    table(
      'SPEC §9 targets',
      ['target', 'measured', 'goal', 'met'],
      verdicts.map((row) => [row.target, row.measured, row.goal, row.met ? 'yes' : 'NO']),
    ),
  );
  return parts.join('\n');
}
