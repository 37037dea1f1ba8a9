#!/usr/bin/env bash
# The project's test command: installs what the tests need when it is
# missing, then runs go vet, a gofmt check and every test with the race
# detector. With CI=true, a test whose dependency is still missing fails
# instead of skipping (internal/testenv).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

# apt_install PACKAGE... installs Debian packages whose commands are missing.
apt_install() {
  if ! command -v apt-get >/dev/null; then
    log "cannot install $* (no apt-get); tests that need them will skip, or fail with CI=true"
    return 0
  fi
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  log "installing $*"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
if ((${#missing[@]})); then
  apt_install "${missing[@]}"
fi

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
