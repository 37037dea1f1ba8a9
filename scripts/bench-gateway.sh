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
# BASE_REV=<git revision> also builds that revision's ws-gateway and runs
# each socket count against it first, so before and after come from the
# same run. After the runs, the figures of this tree's gateway are fitted
# against the socket count (least squares over the counts run) and
# projected to PROJECT sockets on one process (default 100000): a
# projection, since one process here holds at most ~19.9k sockets.
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

gateways=(bin/ws-gateway)
if [ -n "${BASE_REV:-}" ]; then
  basedir=$(mktemp -d)
  log "building ws-gateway at $BASE_REV into bin/ws-gateway-base"
  git worktree add -q --detach "$basedir" "$BASE_REV"
  (cd "$basedir" && go build -o "$OLDPWD/bin/ws-gateway-base" ./cmd/ws-gateway)
  git worktree remove --force "$basedir"
  gateways=(bin/ws-gateway-base bin/ws-gateway)
fi

status=0
mine="$(mktemp)"
first=1
for n in "${counts[@]}"; do
  for gw in "${gateways[@]}"; do
    [ "$first" = 1 ] || echo | tee -a "$out"
    first=0
    log "loadgen sockets -gateway-bin $gw -n $n -duration $duration ${extra_args[*]}"
    # A failed run (its table says why) does not stop the others.
    bin/loadgen sockets -gateway-bin "$gw" -n "$n" -duration "$duration" "${extra_args[@]}" | tee -a "$out" | tee -a "$mine.$(basename "$gw")" || status=1
  done
done

# The projection: each figure of this tree's gateway fitted as a + b × sockets.
grep -h '^data ' "$mine.ws-gateway" 2>/dev/null | awk -v target="${PROJECT:-100000}" '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[NR, kv[1]] = kv[2] } n = NR }
  function fit(key, per,   i, x, y, sx, sy, sxx, sxy, b, a) {
    sx = sy = sxx = sxy = 0
    for (i = 1; i <= n; i++) {
      x = v[i, "sockets"]; y = per ? v[i, key] * x : v[i, key]
      sx += x; sy += y; sxx += x * x; sxy += x * y
    }
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx); a = (sy - b * sx) / n
    slope = b; intercept = a
    return a + b * target
  }
  END {
    if (n < 2) { print "projection: needs at least two socket counts"; exit }
    rss = fit("rss_per_socket_bytes", 1); rs = slope
    heap = fit("heap_per_socket_bytes", 1); hs = slope
    stack = fit("stack_per_socket_bytes", 1); ss = slope
    cpu = fit("gateway_cpu_per_tick_ms", 0); cs = slope; ci = intercept
    printf "projection (fitted over %d runs, not measured): %d sockets on one ws-gateway: RSS %.0f MiB (%.2f KiB a socket: heap %.2f, stack %.2f), CPU %.0f ms a status interval (%.2f ms per 1000 sockets + %.0f ms)\n",
      n, target, rss / 1048576, rs / 1024, hs / 1024, ss / 1024, cpu, cs * 1000, ci
    printf "summary | one ws-gateway at %d sockets, projected from %d runs | RSS %.0f MiB (%.2f KiB a socket), gateway CPU %.0f ms a status interval | | — | a projection, not a measurement |\n", target, n, rss / 1048576, rs / 1024, cpu
  }' | tee -a "$out"
rm -f "$mine"*
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
