#!/usr/bin/env bash
# Measures the join path on this machine with cmd/loadgen: the CPU a join
# costs producer-api and ingest-consumer, each a process of its own, against
# a baseline program doing the same job (loadgen cost, one round), then
# messages/s of the ingest consumer next to raw pipelined ZADDs (and with the
# fast track on), then the join → visible-in-line lag at a fixed offered
# rate, then how soon people get in (join → admitted frame, release → the
# next admitted frame on another gateway) with the fast track on and off.
# Everything runs
# locally (kfake in-process, a redis-server child process). The tables are
# printed and kept in bench/out/joinpath-<date>.txt; progress goes to stderr
# only.
#
# Extra flags: COST_ARGS='-joins 100000 -rounds 3' INGEST_ARGS='-n 500000' LAG_ARGS='-rate 5000' ADMIT_ARGS='-users 2000' scripts/bench-joinpath.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_redis

build_loadgen

read -r -a cost_args <<<"${COST_ARGS:--joins 50000 -rounds 1}"
read -r -a ingest_args <<<"${INGEST_ARGS:-}"
read -r -a lag_args <<<"${LAG_ARGS:-}"
read -r -a admit_args <<<"${ADMIT_ARGS:-}"

mkdir -p bench/out
out="bench/out/joinpath-$(date -u +%Y%m%d-%H%M%S).txt"

log "loadgen cost ${cost_args[*]}"
bin/loadgen cost "${cost_args[@]}" | tee "$out"
echo | tee -a "$out"
log "loadgen ingest ${ingest_args[*]}"
bin/loadgen ingest "${ingest_args[@]}" | tee -a "$out"
echo | tee -a "$out"
log "loadgen lag ${lag_args[*]}"
bin/loadgen lag "${lag_args[@]}" | tee -a "$out"
echo | tee -a "$out"
log "loadgen admit ${admit_args[*]}"
bin/loadgen admit "${admit_args[@]}" | tee -a "$out"
log "written to $out"
