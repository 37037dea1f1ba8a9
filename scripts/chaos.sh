#!/usr/bin/env bash
# Runs the fault campaign (test/integration TestFaultCampaign) for as long
# as asked and writes its tables to bench/CHAOS.md: two producer-apis,
# three consumers, three gateways, the broker and Redis as containers under
# a steady load, while a nemesis kills, pauses, restarts and cuts them off
# on a schedule drawn from the seed. The test fails, and this script with
# it, when any invariant was violated; the tables are written either way.
#
#   DURATION=30m SEED=20261123 RATE=16 bash scripts/chaos.sh
#
# The whole history goes to artifacts/chaos-history.json, the test's log to
# artifacts/chaos.log. Needs a Docker Engine; builds the images first.
# WAITQ_IT_LABEL (default integration) labels its containers, and only
# those are swept at the end: give runs that share an engine their own.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

duration=${DURATION:-30m}
seed=${SEED:-20261123}
rate=${RATE:-16}
# The campaign, then the drain (at most two minutes), with room to spare.
case "$duration" in
  *h) minutes=$((${duration%h} * 60)) ;;
  *m) minutes=${duration%m} ;;
  *s) minutes=$(((${duration%s} + 59) / 60)) ;;
  *) log "DURATION: $duration is not a whole number of s, m or h"; exit 2 ;;
esac
timeout=$((minutes + 15))m

docker info >/dev/null 2>&1 || { log "no Docker Engine"; exit 1; }
bash scripts/build-images.sh
mkdir -p artifacts bench
sweep() {
  docker ps -aq --filter "label=io.waitq.test=${WAITQ_IT_LABEL:-integration}" | xargs -r docker rm -f >/dev/null 2>&1 || true
  docker network ls -q --filter "label=io.waitq.test=${WAITQ_IT_LABEL:-integration}" | xargs -r docker network rm >/dev/null 2>&1 || true
}
trap sweep EXIT

log "fault campaign: $duration, seed $seed, $rate joins/s (log in artifacts/chaos.log)"
status=0
WAITQ_IT_BUILT=1 WAITQ_CHAOS_DURATION="$duration" WAITQ_CHAOS_SEED="$seed" WAITQ_CHAOS_RATE="$rate" \
  WAITQ_CHAOS_REPORT="$PWD/bench/CHAOS.md" WAITQ_CHAOS_HISTORY="$PWD/artifacts/chaos-history.json" \
  go test -tags integration -count=1 -v -run '^TestFaultCampaign$' -timeout "$timeout" ./test/integration \
  >artifacts/chaos.log 2>&1 || status=$?
grep -E '^(--- |ok|FAIL)|draining|drained|faults over' artifacts/chaos.log || true
if [ -f bench/CHAOS.md ]; then
  sed -n '1,20p' bench/CHAOS.md
  log "tables written to bench/CHAOS.md"
fi
exit "$status"
