/**
 * Generated data for the benchmark: valid candidates for the shipped pipeline (a mix the offline
 * jury approves and rejects), whole proposals in every status, and stores of any size written
 * directly in the store's own file format — creating 100,000 proposals through the engine would
 * take minutes and measure nothing the per-proposal scenarios do not already measure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { monotonicFactory } from 'ulid';

/** Ids that sort in creation order, from a fixed start so stores are comparable across runs. */
export function idGenerator(start = Date.parse('2026-01-01T00:00:00Z')) {
  const next = monotonicFactory();
  return () => next(start);
}

const TOOLS = ['pnpm', 'node', 'typescript', 'vite', 'postgres', 'docker', 'python', 'eslint'];

/**
 * A candidate valid against the candidate schema. Every fourth one hedges its claim ("might"),
 * which both offline judges score below the grounding floor, so the jury rejects it.
 */
export function candidate(index, artifactId) {
  const tool = TOOLS[index % TOOLS.length];
  const major = 3 + (index % 17);
  const hedge = index % 4 === 3 ? 'might ' : '';
  return {
    claim: `${tool} ${major} ${hedge}refuses configuration files written by ${tool} ${major - 1} until they are regenerated (case ${index})`,
    rationale: `The file format changed in ${tool} ${major}, and the tool aborts on the older format instead of migrating it in place.`,
    evidence: {
      artifact_ids: [artifactId],
      session_ids: [`session-${index % 997}`],
      project_key: (0x0123456789ab + (index % 4096)).toString(16).padStart(12, '0').slice(-12),
      observed_at: '2026-01-01T10:00:00Z',
      resolution: `Regenerated the file once with ${tool} ${major} after upgrading, then committed the result.`,
    },
    applies_to: {
      stack: [tool],
      scope: { kind: 'versioned', versions: { [tool]: `>=${major} <${major + 1}` } },
      file_patterns: [`${tool}.config.*`],
      task_kinds: ['dependency-upgrade'],
    },
  };
}

/** Visibility for the i-th confirmation: 20 % private (no jury), 40 % org, 40 % public. */
export function visibilityOf(index) {
  const slot = index % 5;
  return slot === 0 ? 'private' : slot % 2 === 1 ? 'org' : 'public';
}

const AT = '2026-01-02T09:00:00Z';

function judgeVerdict(type, passed) {
  const score = passed ? 0.9 : 0.55;
  return {
    judge_type: type,
    score,
    passed,
    criterion_scores: { grounding: passed ? 1 : 0.67, scope_accuracy: 1, generality: 1, disclosure: 1 },
    usage: { tokens_in: null, tokens_out: null },
  };
}

/** A whole proposal in `status`, with the fields the lifecycle would have written by then. */
export function proposalIn(status, index, id, artifactId, visibility = visibilityOf) {
  const proposal = { id, artifact_id: artifactId, created_at: AT, status, candidate: candidate(index, artifactId) };
  if (status === 'passed') proposal.passed_at = AT;
  if (['confirmed', 'approved', 'rejected'].includes(status)) {
    proposal.visibility = status === 'confirmed' ? visibility(index) : 'org';
    proposal.confirmed_at = AT;
  }
  if (status === 'approved' || status === 'rejected') {
    const passed = status === 'approved';
    proposal.judged_at = AT;
    proposal.verdict = {
      rubric_id: 'lesson-promotion',
      gate_policy: 'majority',
      score_threshold: 0.75,
      aggregate_score: passed ? 0.95 : 0.62,
      passed,
      reason: passed ? 'gate_passed' : 'criterion_floor',
      judges: [judgeVerdict('standard', passed), judgeVerdict('adversarial', passed)],
      ...(passed ? {} : { failed_criterion: 'grounding' }),
    };
    proposal.promoted_at = AT;
  }
  return proposal;
}

/** The status of a generated proposal that is not one of the confirmed ones: a plausible mix. */
function otherStatus(index) {
  const slot = index % 20;
  return slot < 4 ? 'pending' : slot < 7 ? 'passed' : slot < 10 ? 'rejected' : 'approved';
}

/** The audit rows that brought a proposal to `status` (SPEC §4), as the engine writes them. */
function history(id, status) {
  const row = (event, from, to, stage, actor) => JSON.stringify({ at: AT, id, event, from, to, stage, actor });
  const rows = [row('create', null, 'pending', 'transform', 'run')];
  if (status === 'passed') rows.push(row('pass', 'pending', 'passed', 'review', 'cli'));
  if (['confirmed', 'approved', 'rejected'].includes(status)) rows.push(row('confirm', 'pending', 'confirmed', 'review', 'cli'));
  if (status === 'approved' || status === 'rejected') {
    rows.push(row(status === 'approved' ? 'approve' : 'reject', 'confirmed', status, 'judge', 'run'));
    rows.push(row('promote', status, status, 'promote', 'run'));
  }
  return rows;
}

/**
 * Write a store of `total` proposals (exactly `confirmed` of them confirmed) the way the file
 * store writes them: proposals/<id>.json as 2-space JSON with a trailing newline, every audit row
 * in events.jsonl, and the ledger rows of passed and rejected proposals. (Pool entries of
 * approved proposals are left out: no measured command reads them.) Confirmed proposals are
 * spread over the id range; `visibility` picks theirs (default: the 20/40/40 mix).
 */
export function writeStore(dir, total, confirmed, visibility = visibilityOf) {
  const proposals = path.join(dir, 'proposals');
  mkdirSync(proposals, { recursive: true });
  const ids = idGenerator();
  const stride = Math.max(1, Math.floor(total / Math.max(confirmed, 1)));
  const logs = { events: [], declined: [], passed: [] };
  const counts = {};
  /** The first few ids in each status, for commands that need one. */
  const samples = {};
  let confirmedLeft = confirmed;
  for (let i = 0; i < total; i++) {
    const id = ids();
    const artifactId = `01J0ART${String(i).padStart(19, '0')}`;
    const isConfirmed = confirmedLeft > 0 && (i % stride === 0 || total - i <= confirmedLeft);
    if (isConfirmed) confirmedLeft--;
    const status = isConfirmed ? 'confirmed' : otherStatus(i);
    counts[status] = (counts[status] ?? 0) + 1;
    if ((samples[status] ??= []).length < 10) samples[status].push(id);
    const proposal = proposalIn(status, i, id, artifactId, visibility);
    writeFileSync(path.join(proposals, `${id}.json`), `${JSON.stringify(proposal, null, 2)}\n`);
    logs.events.push(...history(id, status));
    if (status === 'passed') logs.passed.push(JSON.stringify({ lesson_id: id, artifact_id: artifactId, reason: null, passed_at: AT }));
    if (status === 'rejected') {
      logs.declined.push(
        JSON.stringify({ artifact_id: artifactId, id, reason: proposal.verdict.reason, detail: null, declined_at: AT, verdict: proposal.verdict }),
      );
    }
  }
  for (const [name, rows] of Object.entries(logs)) if (rows.length) writeFileSync(path.join(dir, `${name}.jsonl`), `${rows.join('\n')}\n`);
  atRest();
  return { counts, samples };
}

/**
 * Wait until the files just written are older than the store's racy window (RACY_MS in
 * engine/store/proposal-index.ts, 2 s): the store reads a file modified within 2 s of the scan
 * that recorded it again on every use, as it must (an edit in the same timestamp tick would
 * otherwise go unseen). A user's store of confirmed proposals was confirmed well before the run
 * that judges them; a fixture measured the moment it is written made every scan of the measured
 * command read each of its files again (2 reads more per proposal in `run judge --yes`).
 */
function atRest(ms = 2100) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * A pool of `total` approved, promoted proposals (SPEC §5.8, §9) in the store's file format, with
 * promotions spread over two years and outcome counters on a tenth of them — a few hundred of
 * those bad enough to be prune candidates — and their audit rows. Pool entries are left out: the
 * measured commands (`pool top`, `pool outcome`, `pool prune` as a dry run) do not read them.
 */
export function writePoolStore(dir, total) {
  const proposals = path.join(dir, 'proposals');
  mkdirSync(proposals, { recursive: true });
  const ids = idGenerator();
  const events = [];
  const samples = [];
  const start = Date.parse('2026-11-01T00:00:00Z');
  for (let i = 0; i < total; i++) {
    const id = ids();
    const artifactId = `01J0ART${String(i).padStart(19, '0')}`;
    const proposal = proposalIn('approved', i, id, artifactId);
    proposal.promoted_at = new Date(start - (i % 730) * 86_400_000 - (i % 86_400) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    if (i % 10 === 0) {
      proposal.hit_count = i % 7;
      proposal.miss_count = (i * 3) % 11;
      proposal.last_outcome_at = proposal.promoted_at;
    }
    writeFileSync(path.join(proposals, `${id}.json`), `${JSON.stringify(proposal, null, 2)}\n`);
    const row = (event, from, to, stage, actor) => JSON.stringify({ at: AT, id, event, from, to, stage, actor });
    events.push(row('create', null, 'pending', 'transform', 'run'), row('confirm', 'pending', 'confirmed', 'review', 'cli'));
    events.push(row('approve', 'confirmed', 'approved', 'judge', 'run'), row('promote', 'approved', 'approved', 'promote', 'run'));
    if (samples.length < 20 && (i % 10 === 5 || total < 100)) samples.push(id);
  }
  writeFileSync(path.join(dir, 'events.jsonl'), `${events.join('\n')}\n`);
  atRest();
  return { samples };
}
