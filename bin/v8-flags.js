// The V8 settings of the command line, applied as this module is imported — before any other
// work, so they hold for the whole command. The benchmark imports it too, for the scenarios that
// stand for a command (bench/scenarios/latency.js). A value given on the command line
// (`node --interrupt-budget=N bin/pipeline.js …`, `-`/`_` spellings alike) is left as it is.
import { setFlagsFromString } from 'node:v8';

const given = (flag) => process.execArgv.some((arg) => new RegExp(`^--?${flag}(=|$)`).test(arg.replaceAll('_', '-')));

// A command lives for one batch, not for hours: V8's default tiering (tuned for long-lived pages)
// optimizes a function after little use. On Node 20, `run judge --yes` on 1,000 proposals took
// 1.4–1.6 s of user CPU instead of 0.8–1.2 s (tmpfs), optimizing code it then barely used; at
// 10,000 a larger budget before tiering up is within the noise (docs/design.md, "The command line
// tiers up later"; docs/performance.md, 2026-12-04, evening). Node 20's V8 only: later ones tier
// through Maglev, which was not measured.
if (process.versions.node.startsWith('20.') && !given('interrupt-budget')) setFlagsFromString('--interrupt-budget=500000');

// A run allocates fast and keeps little: what a proposal in flight holds lives long enough to be
// promoted to the old generation, and dies there. V8 lets that generation grow to up to 4× what
// was live after the last full collection before it collects again, so a run's peak RSS grew with
// its length: at 32 in flight, 110 MB for 128 proposals and 209 MB for 12,800, with 16–22 MB
// live. Growing by at most 1.5× keeps the same runs at 102–142 MB, for no CPU the bench can see
// (docs/performance.md, 2026-12-06, afternoon). The flag has been in V8 since 2019.
if (!given('heap-growing-percent')) setFlagsFromString('--heap-growing-percent=50');
