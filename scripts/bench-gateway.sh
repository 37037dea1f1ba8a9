#!/usr/bin/env bash
# Measures how many WebSockets one ws-gateway process holds on this machine
# with every status frame on time, with cmd/loadgen: for each socket count it
# fills the waiting lines in a local redis-server, starts bin/ws-gateway as a
# child process, connects the clients (from 127.0.0.2-254) and watches whole
# status ticks. Everything runs locally (kfake in-process, a redis-server
# child process). The tables are printed and kept in
# bench/out/gateway-<date>.txt; progress goes to stderr only.
#
# Settings: SOCKETS='1000 10000 30000' DURATION=20s
# Extra flags: SOCKETS_ARGS='-interval 2s -events 4' scripts/bench-gateway.sh
#
# FLEET=64000 GATEWAYS=4 then holds that many sockets from this machine at
# once, spread over GATEWAYS loadgen runs side by side, each with its own
# ws-gateway process, Redis and broker: one process here holds at most ~19.9k
# sockets (the hard open-file limit of 20,000 cannot be raised), so more
# than that needs more processes on both ends.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_redis

# Each socket is one descriptor in loadgen and one in the gateway (which
# inherits this limit): raise the soft limit as far as the hard one allows.
hard="$(ulimit -Hn)"
if [ "$hard" = unlimited ] || [ "$(ulimit -n)" != "$hard" ]; then
  ulimit -n "$hard" 2>/dev/null || log "could not raise ulimit -n to $hard"
fi
log "ulimit -n $(ulimit -n) (hard $(ulimit -Hn))"

log "go build -o bin/ws-gateway ./cmd/ws-gateway"
go build -o bin/ws-gateway ./cmd/ws-gateway
build_loadgen

read -r -a counts <<<"${SOCKETS:-1000 10000 30000}"
read -r -a extra_args <<<"${SOCKETS_ARGS:-}"
duration="${DURATION:-20s}"

mkdir -p bench/out
out="bench/out/gateway-$(date -u +%Y%m%d-%H%M%S).txt"
: >"$out"

status=0
for i in "${!counts[@]}"; do
  n="${counts[$i]}"
  [ "$i" = 0 ] || echo | tee -a "$out"
  log "loadgen sockets -n $n -duration $duration ${extra_args[*]}"
  # A failed run (its table says why) does not stop the others.
  bin/loadgen sockets -gateway-bin bin/ws-gateway -n "$n" -duration "$duration" "${extra_args[@]}" | tee -a "$out" || status=1
done
fleet="${FLEET:-0}"
gateways="${GATEWAYS:-4}"
if [ "$fleet" -gt 0 ]; then
  per=$((fleet / gateways))
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo | tee -a "$out"
  log "fleet: $fleet sockets over $gateways gateways ($per each), side by side"
  pids=()
  for g in $(seq 1 "$gateways"); do
    bin/loadgen sockets -gateway-bin bin/ws-gateway -n "$per" -duration "$duration" "${extra_args[@]}" > "$tmp/fleet-$g.txt" &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  for g in $(seq 1 "$gateways"); do
    { echo "fleet gateway $g of $gateways"; grep -v '^summary' "$tmp/fleet-$g.txt"; echo; } | tee -a "$out"
  done
  # One row for the whole fleet: sockets connected, statuses delivered of
  # expected, and the worst gateway's lateness p99.
  cat "$tmp"/fleet-*.txt | awk -v g="$gateways" '
    /^sockets  connected/ { split($3, c, "/"); conn += c[1] }
    /^status   ticks/ {
      for (i = 1; i <= NF; i++) {
        if ($i == "frames") got += $(i + 1)
        if ($i == "(expected") { e = $(i + 1); sub(/\)/, "", e); want += e }
        if ($i == "p99") { p = $(i + 1); sub(/ms/, "", p); if (p + 0 > worst) worst = p + 0 }
      }
    }
    END { printf "summary | sockets from one machine over %d ws-gateway processes side by side | %d connected; %d of %d statuses; worst gateway late p99 %.1fms | | — | > 60k sockets from one machine |\n", g, conn, got, want, worst }
  ' | tee -a "$out"
fi
log "written to $out"
exit "$status"
