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

log "go vet"
go vet ./...

log "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  printf 'files need gofmt:\n%s\n' "$unformatted" >&2
  exit 1
fi

log "go test (CI=${CI:-unset})"
go test -race -count=1 -timeout 20m ./...

log "locust smoke run against the dev stack"
bash scripts/locust-smoke.sh
