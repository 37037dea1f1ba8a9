#!/usr/bin/env bash
# Measures what a status round costs Redis (issue 30), on both status
# paths in the same run: for each count of WAITING users, each count of
# ROUNDS and each of PATHS, a fresh redis-server child on a free loopback
# port, then
#   loadgen statuses -redis redis://127.0.0.1:PORT/0 -waiting N -rounds R -path P
# which loads the line through Store.Ingest, runs a connect round, then R
# status rounds as a gateway's, and prints one line (Redis CPU µs per user
# and round from INFO cpu, wall ms per round, Redis bytes per waiting user
# from INFO memory, CPU per user of the connect round). Path "store" reads
# every user from Redis every round (the way before), "journal" as a
# gateway does now (gateway.Tracker). Writes bench/statuses.md (OUT=...
# for another file): the machine, the redis-server version, the date, the
# lines and the ratio of the two paths. Progress goes to stderr.
#
#   WAITING='100000 1000000' ROUNDS='1 4' PATHS='store journal' bash scripts/bench-statuses.sh
#
# A line of 10M users needs about 5 GB of Redis and a few minutes to load:
# WAITING=10000000 runs it too.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_redis && build_loadgen

read -r -a waiting <<<"${WAITING:-100000 1000000}"
read -r -a rounds <<<"${ROUNDS:-1 4}"
read -r -a paths <<<"${PATHS:-store journal}"
out="${OUT:-bench/statuses.md}"
tmp=$(mktemp -d)
rs=
trap 'rm -rf "$tmp"; [ -n "$rs" ] && kill "$rs" 2>/dev/null || true' EXIT

lines=()
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for n in "${waiting[@]}"; do
  for r in "${rounds[@]}"; do
   for p in "${paths[@]}"; do
    redis_child "$tmp"
    log "loadgen statuses -waiting $n -rounds $r -path $p (redis-server on port $port)"
    lines+=("$p $(bin/loadgen statuses -redis "redis://127.0.0.1:$port/0" -waiting "$n" -rounds "$r" -path "$p")")
    echo "${lines[-1]}" >&2
    kill "$rs"
    wait "$rs" 2>/dev/null || true
    rs=
   done
  done
done

mkdir -p "$(dirname "$out")"
{
  echo "# Status rounds: Redis CPU and memory per waiting user"
  echo
  echo "Written by \`scripts/bench-statuses.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): one fresh redis-server child per line,"
  echo "\`loadgen statuses -waiting N -rounds R\` against it (docs/performance.md, [status rounds](../docs/performance.md#what-a-status-round-costs-redis))."
  echo
  echo "- machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) of memory, $(uname -sr); other work may share the cores"
  echo "- load average (1, 5, 15 min) $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end: work besides the measurement inflates the CPU figures (cache, preemption)"
  echo "- redis-server $(redis-server --version | grep -oE 'v=[^ ]+' | cut -d= -f2), $(go version | cut -d' ' -f3-4)"
  echo
  echo "| path | waiting | rounds | Redis CPU µs per user and round | wall ms per round | Redis bytes per waiting user | the same with presence | Redis CPU µs per user at connect |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for l in "${lines[@]}"; do
    # shellcheck disable=SC2001
    echo "$l" | sed -E 's/^([a-z]+) statuses: waiting=([^ ]+) rounds=([^ ]+) redis_cpu_us_per_user_round=([^ ]+) wall_ms_per_round=([^ ]+) redis_bytes_per_user=([^ ]+) redis_bytes_per_user_with_presence=([^ ]+) redis_cpu_us_per_user_connect=([^ ]+)$/| \1 | \2 | \3 | \4 | \5 | \6 | \7 | \8 |/'
  done
  echo
  echo "The journal's round against the store's, same waiting and rounds (Redis CPU per user and round):"
  echo
  for l in "${lines[@]}"; do
    [ "${l%% *}" = journal ] || continue
    key=$(echo "$l" | grep -oE 'waiting=[0-9]+ rounds=[0-9]+')
    for m in "${lines[@]}"; do
      if [ "${m%% *}" = store ] && [ "$(echo "$m" | grep -oE 'waiting=[0-9]+ rounds=[0-9]+')" = "$key" ]; then
        j=$(echo "$l" | grep -oE 'redis_cpu_us_per_user_round=[0-9.]+' | cut -d= -f2)
        s=$(echo "$m" | grep -oE 'redis_cpu_us_per_user_round=[0-9.]+' | cut -d= -f2)
        echo "- $key: journal $j µs, store $s µs: $(awk -v j="$j" -v s="$s" 'BEGIN { if (j > 0) printf "%.0f× less", s / j; else print "below the resolution of INFO cpu" }')"
      fi
    done
  done
  echo
  echo "The lines (path, then loadgen's line):"
  echo
  echo '```'
  printf '%s\n' "${lines[@]}"
  echo '```'
} >"$out"
log "written to $out"
cat "$out"
