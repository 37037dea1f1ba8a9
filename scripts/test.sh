#!/usr/bin/env bash
# The project's test command: installs what the tests need when it is
# missing, then runs go vet, a gofmt check, every test with the race
# detector, and a short Locust run against the dev stack. With CI=true, a test whose dependency is still missing fails
# instead of skipping (internal/testenv).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_redis
ensure_chromium

log "go vet"
go vet ./...

log "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  printf 'files need gofmt:\n%s\n' "$unformatted" >&2
  exit 1
fi

log "go test (CI=${CI:-unset}); full log in artifacts/go-test.log"
mkdir -p artifacts
status=0
go test -race -count=1 -timeout 20m -v ./... > artifacts/go-test.log 2>&1 || status=$?
grep -E '^(ok|FAIL|panic:)|^ *--- FAIL|screenshot: ' artifacts/go-test.log || true
passed=$(grep -cE '^ *--- PASS' artifacts/go-test.log || true)
failed=$(grep -cE '^ *--- FAIL' artifacts/go-test.log || true)
skipped=$(grep -cE '^ *--- SKIP' artifacts/go-test.log || true)
if [ "$status" -ne 0 ]; then
  log "failing tests:"
  grep -E -B1 -A40 '^ *--- FAIL|^panic:' artifacts/go-test.log | head -400 >&2 || true
  echo "go test: $passed passed, $failed failed, $skipped skipped"
  exit "$status"
fi

# inputs DIR counts the saved fuzz inputs in DIR (0 when it does not exist).
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

log "fuzzing each target for ${FUZZTIME:-5s} beyond its seeds"
for target in pkg/queue:FuzzTicketVerify pkg/entry:FuzzVerify pkg/queue:FuzzDecodeMessage pkg/queue:FuzzIDs pkg/gateway:FuzzClientFrame pkg/gateway:FuzzAppendStatus; do
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

echo "go test: $passed passed, $failed failed, $skipped skipped"
