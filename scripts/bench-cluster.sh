#!/usr/bin/env bash
# Measures the ingest path on one Redis and on a Redis Cluster of three
# masters in the same run, with cmd/loadgen: messages/s of the ingest
# consumer (loadgen ingest), once with one redis-server child and once with
# -redis-cluster. (producer-api reads Redis only for an event's cached
# configuration: docs/performance.md, Redis Cluster.) Everything runs
# on loopback (kfake in-process, redis-server children). The tables are
# printed and kept in bench/out/cluster-<date>.txt; progress goes to stderr.
#
# Extra flags: INGEST_ARGS='-n 500000' scripts/bench-cluster.sh
set -euo pipefail
# shellcheck source=scripts/lib.sh
cd "$(dirname "$0")/.." && . scripts/lib.sh
ensure_redis && build_loadgen

read -r -a ingest_args <<<"${INGEST_ARGS:--n 200000 -timeout 60s}"

mkdir -p bench/out
out="bench/out/cluster-$(date -u +%Y%m%d-%H%M%S).txt"
: >"$out"
for cluster in false true; do
  log "loadgen ingest ${ingest_args[*]} -redis-cluster=$cluster"
  bin/loadgen ingest "${ingest_args[@]}" -redis-cluster="$cluster" | tee -a "$out"
  echo | tee -a "$out"
done
log "written to $out"
