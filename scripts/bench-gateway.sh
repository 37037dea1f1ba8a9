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
log "go build -o bin/loadgen ./cmd/loadgen"
go build -o bin/loadgen ./cmd/loadgen

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
log "written to $out"
exit "$status"
