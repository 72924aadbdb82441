/**
 * A judge of fixed latency: an OpenAI-compatible `/chat/completions` endpoint on 127.0.0.1 that
 * answers every request with a valid, passing verdict after exactly L ms. It runs in its own
 * process so its work never competes with the run being measured for the event loop.
 *
 * Usage: node bench/lib/judge-server.js LATENCY_MS   → prints `{"port": N}` once listening;
 * GET /stats returns `{requests, maxInFlight, cpuMs, firstRequestAt, lastAnswerAt, turnaroundMs}`: this
 * process's CPU so far; the wall-clock times (ms since the epoch) of the first request and the last
 * answer; and, over kept-alive connections, the time from an answer to the next request (count, mean,
 * p50, p90, max).
 */
import { createServer } from 'node:http';

const latency = Number(process.argv[2] ?? 100);
const verdict = {
  score: 0.9,
  passed: true,
  criterion_scores: { grounding: 0.9, scope_accuracy: 0.9, generality: 0.9, disclosure: 0.95 },
  feedback_summary: 'Grounded, bounded and general.',
  confidence: 0.8,
};
const body = JSON.stringify({
  id: 'bench',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(verdict) }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 400, completion_tokens: 60 },
});

let requests = 0;
let inFlight = 0;
let maxInFlight = 0;
/** Wall-clock times (ms since the epoch) of the first request and the last answer: what a run spent outside its calls. */
let firstRequestAt;
let lastAnswerAt;
const now = () => performance.timeOrigin + performance.now();
const answeredAt = new WeakMap();
const turnarounds = [];
const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : undefined);

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    const cpu = process.cpuUsage();
    const sorted = [...turnarounds].sort((a, b) => a - b);
    const turnaroundMs = {
      count: sorted.length,
      mean: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
      p50: quantile(sorted, 0.5),
      p90: quantile(sorted, 0.9),
      max: sorted.at(-1),
    };
    res.end(JSON.stringify({ requests, maxInFlight, cpuMs: (cpu.user + cpu.system) / 1000, firstRequestAt, lastAnswerAt, turnaroundMs }));
    return;
  }
  req.resume();
  req.on('end', () => {
    requests++;
    firstRequestAt ??= now();
    // On a kept-alive connection, the time from its last answer to this request: what the client
    // took to turn an answer into its next call (its share of a run's time above the ideal).
    const answered = answeredAt.get(req.socket);
    if (answered !== undefined) turnarounds.push(now() - answered);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    setTimeout(() => {
      inFlight--;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
      lastAnswerAt = now();
      answeredAt.set(req.socket, lastAnswerAt);
    }, latency);
  });
});
// Every run's connections stay open between calls (keep-alive), as they would to a real server.
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
// Nothing to flush: stop at once, keep-alive connections and all — also when the parent dies
// (its end of our stdin closes), so a crashed benchmark leaves no server behind.
process.on('SIGTERM', () => process.exit(0));
process.stdin.on('end', () => process.exit(0)).resume();
