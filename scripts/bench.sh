#!/usr/bin/env bash
# Runs every measurement on this machine and writes bench/RESULTS.md: a
# summary table of the figures next to their same-run baselines and goals,
# then the raw outputs: the Go benchmarks of the hot paths, redis-benchmark's
# pipelined ZADD (the store's limit), the CPU a join costs producer-api and
# the ingest consumer against baseline programs, the ingest consumer against raw ZADD, the
# join → visible-in-line lag (scripts/bench-joinpath.sh), sockets per
# gateway (scripts/bench-gateway.sh), and pages through waitq-guard next to
# the origin (loadgen guard, with a trivial origin and with one spending
# GUARD_ORIGIN_CPU a page). Measurements only: nothing here passes or fails
# on a number.
#
# Settings: BENCHTIME=2s SOCKETS='1000 10000 19500' FLEET=64000 GATEWAYS=4 DURATION=20s
#           GUARD_ARGS='-c 64 -d 10s' GUARD_ORIGIN_CPU=200us
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_redis

out=bench/RESULTS.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${rs:-}" ] && kill "$rs" 2>/dev/null || true' EXIT

log "go benchmarks"
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-2s}" ./pkg/... > "$tmp/go.txt"

log "redis-benchmark -P 32 ZADD (the store's limit)"
redis_child "$tmp"
redis-benchmark -p "$port" -P 32 -n 1000000 -r 1000000 -q ZADD waitq:bench __rand_int__ __rand_int__ > "$tmp/redis.txt" 2>&1
kill "$rs"; rs=

log "join path"
bash scripts/bench-joinpath.sh > "$tmp/joinpath.txt"
log "gateway sockets"
SOCKETS="${SOCKETS:-1000 10000 19500}" FLEET="${FLEET:-64000}" GATEWAYS="${GATEWAYS:-4}" DURATION="${DURATION:-20s}" \
  bash scripts/bench-gateway.sh > "$tmp/gateway.txt"

log "waitq-guard"
read -r -a guard_args <<<"${GUARD_ARGS:-}"
go build -o bin/loadgen ./cmd/loadgen
{
  bin/loadgen guard "${guard_args[@]}"
  echo
  bin/loadgen guard "${guard_args[@]}" -origin-cpu "${GUARD_ORIGIN_CPU:-200us}"
} > "$tmp/guard.txt"

# The store's limit against the consumer's rate, from the summary rows.
zadd_rps=$(tr '\r' '\n' < "$tmp/redis.txt" | grep -oE '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1)
consumer_rps=$(grep -h '^summary | ingest consumer' "$tmp/joinpath.txt" | awk -F'|' '{print $3}' | grep -oE '[0-9]+' | head -1)

{
  echo "# waitq measurements"
  echo
  echo "Written by \`scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(go version | cut -d' ' -f3-4), $(redis-server --version | cut -d' ' -f3)."
  echo "Clients, services, the broker and Redis share the cores: the ratios, taken in the same run, say more than the rates."
  echo
  echo "## Summary"
  echo
  echo "| what | figure | baseline (same run) | ratio | goal |"
  echo "|---|---|---|---|---|"
  grep -h '^summary ' "$tmp/joinpath.txt" "$tmp/gateway.txt" "$tmp/guard.txt" | sed 's/^summary //' || true
  if [ -n "$zadd_rps" ] && [ -n "$consumer_rps" ]; then
    awk -v c="$consumer_rps" -v z="$zadd_rps" 'BEGIN { printf "| ingest consumer into Redis | %d msg/s | redis-benchmark -P 32 ZADD %d/s | %.2f | ≥ 0.5 |\n", c, z, c / z }'
  fi
  echo
  echo "## Go benchmarks"; echo; echo '```'; grep -E '^(Benchmark|ok)' "$tmp/go.txt"; echo '```'
  echo; echo "## Redis limit: redis-benchmark -P 32 ZADD"; echo; echo '```'; tr '\r' '\n' < "$tmp/redis.txt" | grep -v '^\s*$' | tail -2; echo '```'
  echo; echo "## Join path (ratios against baselines of the same run)"; echo; echo '```'; cat "$tmp/joinpath.txt"; echo '```'
  echo; echo "## Sockets per gateway"; echo; echo '```'; cat "$tmp/gateway.txt"; echo '```'
  echo; echo "## Pages through waitq-guard"; echo; echo '```'; cat "$tmp/guard.txt"; echo '```'
} > "$out"
log "wrote $out"
