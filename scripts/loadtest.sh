#!/usr/bin/env bash
# Runs scripts/locustfile.py headless against a running waitq for a bounded
# time and prints Locust's summary (also kept as CSV in bench/out/). It
# creates the event first through the admin API.
#
# Settings (environment), with defaults:
#   PRODUCER_URL=http://127.0.0.1:8080  GATEWAY_URL=http://127.0.0.1:8081
#   ADMIN_TOKEN (required)  EVENT=loadtest-<time>  CAPACITY=50  STAY=30 (HOLD, its older name, still read)
#   USERS=50  SPAWN_RATE=10  DURATION=60s  USER_CLASS=QueueUser
#   ADMISSION_TIMEOUT=120  THINK_SECONDS=2
#   CHALLENGE_BITS=0 (>0: the event asks each join for a proof of work of
#   that many bits, solved by the simulated users as the page does)
# For Locust's web UI instead, run: /usr/bin/python3 -m locust -f scripts/locustfile.py
# (it listens on :8089, an origin the gateways allow in compose.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# Debian's Locust lives in the system Python, whatever python3 is first on PATH.
PY=/usr/bin/python3
"$PY" -c 'import locust, websocket' 2>/dev/null || apt_install python3-locust python3-websocket

: "${ADMIN_TOKEN:?set ADMIN_TOKEN to the WAITQ_ADMIN_TOKEN of producer-api}"
PRODUCER_URL=${PRODUCER_URL:-http://127.0.0.1:8080}
GATEWAY_URL=${GATEWAY_URL:-http://127.0.0.1:8081}
EVENT=${EVENT:-loadtest-$(date -u +%H%M%S)}
stamp=$(date -u +%Y%m%d-%H%M%S)

challenge=""
if [ "${CHALLENGE_BITS:-0}" -gt 0 ]; then
  challenge=",\"challenge\":{\"mode\":\"fixed\",\"difficulty\":$CHALLENGE_BITS}"
fi
log "creating event $EVENT (capacity ${CAPACITY:-50}, stay ${STAY:-${HOLD:-30}}s, challenge ${CHALLENGE_BITS:-0} bits)"
curl -fsS -X PUT -H "Authorization: Bearer $ADMIN_TOKEN" \
  -d "{\"capacity\":${CAPACITY:-50},\"staySeconds\":${STAY:-${HOLD:-30}},\"partitions\":3$challenge}" \
  "$PRODUCER_URL/v1/admin/events/$EVENT" >/dev/null

mkdir -p bench/out
prefix="bench/out/locust-$stamp"
log "locust: ${USERS:-50} users, spawn ${SPAWN_RATE:-10}/s, ${DURATION:-60s}"
status=0
WAITQ_EVENT=$EVENT WAITQ_GATEWAY_URL=$GATEWAY_URL \
WAITQ_ADMISSION_TIMEOUT=${ADMISSION_TIMEOUT:-120} WAITQ_THINK_SECONDS=${THINK_SECONDS:-2} \
  "$PY" -m locust -f scripts/locustfile.py --headless --only-summary \
    -u "${USERS:-50}" -r "${SPAWN_RATE:-10}" -t "${DURATION:-60s}" \
    --host "$PRODUCER_URL" --csv "$prefix" "${USER_CLASS:-QueueUser}" || status=$?
column -s, -t < "${prefix}_stats.csv"
log "CSV: ${prefix}_stats.csv"
exit "$status"
