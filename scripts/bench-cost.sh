#!/usr/bin/env bash
# What a join costs each program (issue 48): CPU time per join of
# producer-api, ingest-consumer, redis-server and the kfake broker, each a
# process of its own, against baseline programs doing the same job with
# nothing else, in alternating rounds:
#   loadgen cost -joins N -rounds R
# once with the page's join keys and once without. Writes bench/cost.md
# (OUT=... for another file): the machine, the date and both reports.
# Progress goes to stderr.
#
#   JOINS=100000 ROUNDS=3 bash scripts/bench-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_redis && build_loadgen

joins=${JOINS:-100000}
rounds=${ROUNDS:-3}
out="${OUT:-bench/cost.md}"
reports=()
for keys in true false; do
  log "loadgen cost -joins $joins -rounds $rounds -join-keys=$keys"
  reports+=("$(bin/loadgen cost -joins "$joins" -rounds "$rounds" -join-keys="$keys")")
done

write_reports "$out" "What a join costs, process by process" \
  "Written by \`scripts/bench-cost.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): \`loadgen cost -joins $joins -rounds $rounds\`, with the page's join keys and without (docs/performance.md, [what a join costs](../docs/performance.md#what-a-join-costs-process-by-process))." \
  "${reports[@]}"
