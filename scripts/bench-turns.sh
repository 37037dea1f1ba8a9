#!/usr/bin/env bash
# Simulates a sale in which people step away (issue 47) in a fresh
# redis-server child, once per arrival window:
#   loadgen turns -redis redis://127.0.0.1:PORT/0 -people N -capacity C -arrival A
# PEOPLE join in the first minute; 30 % step away once for 1 to 15 minutes,
# 10 % close the page for good, 20 % of the admitted never reach the shop;
# time is simulated (a monitor tick each simulated second), every step the
# product's own. Writes bench/turns.md (OUT=... for another file): the
# machine, the date and the reports. Progress goes to stderr.
#
#   PEOPLE=3000 CAPACITY=100 ARRIVALS="1m 30s 0s" bash scripts/bench-turns.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_redis && build_loadgen

people=${PEOPLE:-3000}
capacity=${CAPACITY:-100}
read -r -a arrivals <<<"${ARRIVALS:-1m 30s 0s}"
out="${OUT:-bench/turns.md}"
tmp=$(mktemp -d)
rs=
trap 'rm -rf "$tmp"; [ -n "$rs" ] && kill "$rs" 2>/dev/null || true' EXIT

redis_child "$tmp"
reports=()
for a in "${arrivals[@]}"; do
  log "loadgen turns -people $people -capacity $capacity -arrival $a (redis-server on port $port)"
  reports+=("$(bin/loadgen turns -redis "redis://127.0.0.1:$port/0" -people "$people" -capacity "$capacity" -arrival "$a")")
done

write_reports "$out" "A sale where people step away: places kept, turns called, no-shows' slots freed" \
  "Written by \`scripts/bench-turns.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): a fresh redis-server child, \`loadgen turns -people $people -capacity $capacity -arrival A\` for each arrival window A (docs/performance.md, [people who step away](../docs/performance.md#people-who-step-away))." \
  "${reports[@]}"
