#!/usr/bin/env bash
# A short Locust run (tens of users, seconds) against the dev stack, so the
# Locust script cannot rot: fails when Locust records any failure or no
# admission at all.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# Debian's Locust lives in the system Python, whatever python3 is first on PATH.
PY=/usr/bin/python3
"$PY" -c 'import locust, websocket' 2>/dev/null || apt_install python3-locust python3-websocket

go build -o bin/devstack ./cmd/devstack
export WAITQ_ADMIN_TOKEN=locust-smoke-token
export WAITQ_PRODUCER_ADDR=127.0.0.1:18080 WAITQ_GATEWAY_ADDR=127.0.0.1:18081 WAITQ_INGEST_ADDR=127.0.0.1:18082
bin/devstack >/tmp/waitq-locust-smoke.log 2>&1 &
stack=$!
trap 'kill "$stack" 2>/dev/null; wait "$stack" 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do
  curl -fs "http://$WAITQ_GATEWAY_ADDR/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done

ADMIN_TOKEN=$WAITQ_ADMIN_TOKEN PRODUCER_URL=http://$WAITQ_PRODUCER_ADDR GATEWAY_URL=http://$WAITQ_GATEWAY_ADDR \
  EVENT=smoke CAPACITY=10 STAY=10 USERS=20 SPAWN_RATE=10 DURATION=15s THINK_SECONDS=1 ADMISSION_TIMEOUT=12 CHALLENGE_BITS=12 \
  bash scripts/loadtest.sh | tee /tmp/waitq-locust-smoke.txt
# At least one user got in (time-to-admission counted successes).
awk '$2 == "time-to-admission" && $3 > 0 { ok = 1 } END { exit !ok }' /tmp/waitq-locust-smoke.txt \
  || { log "no admission recorded"; exit 1; }
# Every simulated visitor solved the event's challenge before joining.
awk '$1 == "POW" && $2 == "solve" && $3 > 0 { ok = 1 } END { exit !ok }' /tmp/waitq-locust-smoke.txt \
  || { log "no challenge solved"; exit 1; }
log "locust smoke run passed"
