#!/usr/bin/env bash
# Simulates a whole sale (issue 30) in a fresh redis-server child on a free
# loopback port:
#   loadgen sale -redis redis://127.0.0.1:PORT/0 -joins N -gateways G -rate R
# JOINS people join one event through the ingest path as fast as it takes
# them, GATEWAYS simulated gateways tell each their place every 5 s (each
# with its own gateway.Tracker, as ws-gateway's), the slot monitor admits
# RATE a minute until the line drained. Writes bench/sale.md (OUT=... for
# another file): the machine, the redis-server version, the date and the
# report. Progress goes to stderr.
#
#   JOINS=1000000 GATEWAYS=4 RATE=600000 bash scripts/bench-sale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_redis && build_loadgen

joins=${JOINS:-1000000}
gateways=${GATEWAYS:-4}
rate=${RATE:-600000}
out="${OUT:-bench/sale.md}"
tmp=$(mktemp -d)
rs=
trap 'rm -rf "$tmp"; [ -n "$rs" ] && kill "$rs" 2>/dev/null || true' EXIT

redis_child "$tmp"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "loadgen sale -joins $joins -gateways $gateways -rate $rate (redis-server on port $port)"
report=$(bin/loadgen sale -redis "redis://127.0.0.1:$port/0" -joins "$joins" -gateways "$gateways" -rate "$rate")

mkdir -p "$(dirname "$out")"
{
  echo "# A whole sale: joins, statuses and admission in one event"
  echo
  echo "Written by \`scripts/bench-sale.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): a fresh redis-server child,"
  echo "\`loadgen sale -joins $joins -gateways $gateways -rate $rate\` against it (docs/performance.md, [a whole sale](../docs/performance.md#a-whole-sale))."
  echo
  echo "- machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) of memory, $(uname -sr); the simulated gateways, the loaders and Redis share the cores"
  echo "- load average (1, 5, 15 min) $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "- redis-server $(redis-server --version | grep -oE 'v=[^ ]+' | cut -d= -f2), $(go version | cut -d' ' -f3-4)"
  echo
  echo '```'
  echo "$report"
  echo '```'
} >"$out"
log "written to $out"
cat "$out"
