#!/usr/bin/env bash
# Soak a test file: run it RUNS times in a row with COPIES copies at once (a loaded machine), and
# stop at the first failure. A flaky test is a bug report: this is how one is found, and how a fix
# is shown to hold (issue 10: the kill-judge torture, 30 runs in a row with two copies at once).
#
#   scripts/soak.sh [RUNS=30] [COPIES=2] [FILE=test/torture/kill-judge.test.ts]
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
copies="${2:-2}"
file="${3:-test/torture/kill-judge.test.ts}"
logs="$(mktemp -d)"
echo "soak: $file, $runs runs of $copies copies at once; logs in $logs"
for run in $(seq 1 "$runs"); do
  pids=()
  for copy in $(seq 1 "$copies"); do
    npx vitest run "$file" >"$logs/run-$run-copy-$copy.log" 2>&1 &
    pids+=("$!")
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  if [ "$failed" -ne 0 ]; then
    echo "soak: run $run of $runs FAILED (see $logs/run-$run-*.log)"
    exit 1
  fi
  echo "soak: run $run of $runs passed ($copies copies)"
done
echo "soak: $runs runs in a row passed, $copies copies at once"
