#!/usr/bin/env bash
# Measures how long a proof-of-work challenge takes to solve at each
# difficulty (10 bits to the ceiling, 18, in steps of 2), in headless chromium's Web Worker
# (internal/web/static/pow-worker.js) and in Go's challenge.Solve, and writes
# the markdown table to bench/pow.md (OUT=... for another file). Bounded: at
# most N (10) solves per difficulty and side, and at most BUDGET (40s) per
# difficulty and side, so a few minutes in all. Needs chromium on PATH.
#
#   N=20 BUDGET=60s scripts/bench-pow.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

command -v chromium >/dev/null || apt_install chromium

out="${OUT:-bench/pow.md}"
mkdir -p "$(dirname "$out")"
log "TestProofOfWorkSolveTimes → $out"
WAITQ_POW_BENCH="$PWD/$out" WAITQ_POW_BENCH_N="${N:-10}" WAITQ_POW_BENCH_BUDGET="${BUDGET:-40s}" \
  go test ./internal/web/ -run '^TestProofOfWorkSolveTimes$' -count=1 -v -timeout 15m >&2
cat "$out"
