#!/usr/bin/env bash
# Takes the screenshots of docs/screenshots.md: the waiting room page in
# English, Korean and Japanese at a desktop's width and at 360 px, and the
# console charting a sale, with Debian's chromium against a devstack
# running a sale (internal/stack's TestScreenshots). Installs chromium, the
# Noto CJK fonts and redis-server when missing. Writes docs/screenshots/
# (or the directory given as the first argument).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_redis
ensure_chromium

out=$(realpath -m "${1:-docs/screenshots}")
mkdir -p "$out"
log "screenshots into $out (about two minutes: the sale runs 90 s)"
mkdir -p artifacts
status=0
WAITQ_SCREENSHOTS="$out" go test ./internal/stack/ -run '^TestScreenshots$' -count=1 -v -timeout 10m > artifacts/screenshots.log 2>&1 || status=$?
grep -E 'screenshot: |^(ok|FAIL)|^ *--- FAIL|^panic:' artifacts/screenshots.log || true
if [ "$status" -ne 0 ]; then
  log "the screenshots failed (full log in artifacts/screenshots.log):"
  grep -E -A30 '^ *--- FAIL|^panic:' artifacts/screenshots.log | head -80 >&2 || true
  exit "$status"
fi
ls -l "$out"/*.png
