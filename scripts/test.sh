#!/usr/bin/env bash
# The project's test command: installs what the tests need when it is
# missing, then runs go vet, a gofmt check, every test with the race
# detector, a short Locust run against the dev stack, and the container
# suite (test/integration, ending with a 2-minute fault campaign) on images
# it builds. With CI=true, a test whose
# dependency is still missing fails instead of skipping (internal/testkit/testenv).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_redis
ensure_locale
ensure_chromium
ensure_pyjwt
ensure_aiosmtpd
ensure_node_jose
ensure_prometheus
ensure_helm
ensure_proxies

log "go vet"
go vet ./...
go vet -tags integration ./test/integration

log "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  printf 'files need gofmt:\n%s\n' "$unformatted" >&2
  exit 1
fi

mkdir -p artifacts
passed=0 failed=0 skipped=0

# gotest LOG ARGS... runs go test -v with ARGS into artifacts/LOG, shows the
# package lines and failures, adds to the counts, and exits on failure with
# the closing line.
gotest() {
  local logfile="artifacts/$1" status=0
  shift
  go test -count=1 -v "$@" > "$logfile" 2>&1 || status=$?
  grep -E '^(ok|FAIL|panic:)|^ *--- FAIL|screenshot: ' "$logfile" || true
  passed=$((passed + $(grep -cE '^ *--- PASS' "$logfile" || true)))
  failed=$((failed + $(grep -cE '^ *--- FAIL' "$logfile" || true)))
  skipped=$((skipped + $(grep -cE '^ *--- SKIP' "$logfile" || true)))
  if [ "$status" -ne 0 ]; then
    log "failing tests (full log in $logfile):"
    grep -E -B1 -A40 '^ *--- FAIL|^panic:' "$logfile" | head -400 >&2 || true
    echo "go test: $passed passed, $failed failed, $skipped skipped"
    exit "$status"
  fi
}

log "go test (CI=${CI:-unset}); full log in artifacts/go-test.log"
gotest go-test.log -race -timeout 20m ./...

# inputs DIR counts the saved fuzz inputs in DIR (0 when it does not exist).
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

log "fuzzing each target for ${FUZZTIME:-5s} beyond its seeds"
for target in internal/queue:FuzzTicketVerify pkg/entry:FuzzVerify internal/queue:FuzzDecodeMessage internal/queue:FuzzIDs internal/gateway:FuzzClientFrame internal/gateway:FuzzAppendStatus internal/queue:FuzzVisitorVerify internal/challenge:FuzzVerify internal/challenge:FuzzParse pkg/jointoken:FuzzVerify internal/queue:FuzzUnmarshalMessage internal/queue:FuzzAppendJSON internal/queue:FuzzAppendJSONString internal/producer:FuzzJoinResponseJSON; do
  pkg=${target%%:*} name=${target##*:}
  corpus="$pkg/testdata/fuzz/$name"
  before=$(inputs "$corpus")
  ok=0
  for attempt in 1 2; do
    if go test "./$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "${FUZZTIME:-5s}" > "artifacts/fuzz-$name.log" 2>&1; then
      ok=1
      break
    fi
    # A real failure leaves its input in testdata/fuzz: never retry that.
    [ "$(inputs "$corpus")" -gt "$before" ] && break
    log "fuzzing $target stopped without a failing input (attempt $attempt); see artifacts/fuzz-$name.log"
  done
  if [ "$ok" = 0 ]; then
    tail -40 "artifacts/fuzz-$name.log" >&2
    log "fuzzing $target failed; reproduce: go test ./$pkg -run '^$' -fuzz $name"
    exit 1
  fi
done

log "locust smoke run against the dev stack"
bash scripts/locust-smoke.sh

# The container suite. Without a Docker Engine its tests skip, or fail with
# CI=true (internal/testkit/testenv).
sweep() {
  docker ps -aq --filter "label=io.waitq.test=${WAITQ_IT_LABEL:-integration}" | xargs -r docker rm -f >/dev/null 2>&1 || true
  docker network ls -q --filter "label=io.waitq.test=${WAITQ_IT_LABEL:-integration}" | xargs -r docker network rm >/dev/null 2>&1 || true
}
if docker info >/dev/null 2>&1; then
  log "building the container images"
  bash scripts/build-images.sh
  export WAITQ_IT_BUILT=1
  trap sweep EXIT
else
  log "no Docker Engine: the container suite will skip (fail with CI=true)"
fi
log "container suite (testcontainers-go) with a 2-minute fault campaign; full log in artifacts/go-test-integration.log"
# The campaign (TestFaultCampaign) keeps its tables and its whole history.
rm -f artifacts/chaos.md
export WAITQ_CHAOS_REPORT="$PWD/artifacts/chaos.md" WAITQ_CHAOS_HISTORY="$PWD/artifacts/chaos-history.json"
gotest go-test-integration.log -tags integration -timeout 25m ./test/integration
grep -hE 'joins sent|admitted frames to' artifacts/go-test-integration.log | sed 's/^ */  /' || true
if [ -f artifacts/chaos.md ]; then
  log "fault campaign (artifacts/chaos.md):"
  sed -n '/^| invariant/,/^$/p' artifacts/chaos.md
fi

echo "go test: $passed passed, $failed failed, $skipped skipped"
