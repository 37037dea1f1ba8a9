#!/usr/bin/env bash
# Measures the join path on one Redis and on a Redis Cluster of three masters
# in the same run, with cmd/loadgen: joins/s through producer-api (loadgen
# joins) and messages/s of the ingest consumer (loadgen ingest), each once
# with one redis-server child and once with -redis-cluster. Everything runs
# on loopback (kfake in-process, redis-server children). The tables are
# printed and kept in bench/out/cluster-<date>.txt; progress goes to stderr.
#
# Extra flags: JOINS_ARGS='-d 10s' INGEST_ARGS='-n 500000' scripts/bench-cluster.sh
set -euo pipefail
# shellcheck source=scripts/lib.sh
cd "$(dirname "$0")/.." && . scripts/lib.sh
ensure_redis && build_loadgen

read -r -a joins_args <<<"${JOINS_ARGS:--d 5s -n 200000}"
read -r -a ingest_args <<<"${INGEST_ARGS:--n 200000 -timeout 60s}"

mkdir -p bench/out
out="bench/out/cluster-$(date -u +%Y%m%d-%H%M%S).txt"
: >"$out"
for cluster in false true; do
  log "loadgen joins ${joins_args[*]} -redis-cluster=$cluster"
  bin/loadgen joins "${joins_args[@]}" -redis-cluster="$cluster" | tee -a "$out"
  echo | tee -a "$out"
  log "loadgen ingest ${ingest_args[*]} -redis-cluster=$cluster"
  bin/loadgen ingest "${ingest_args[@]}" -redis-cluster="$cluster" | tee -a "$out"
  echo | tee -a "$out"
done
log "written to $out"
