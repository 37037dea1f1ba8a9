# Shared by the scripts in this folder: source it, do not run it.

# log prints a progress line to stderr.
log() { printf '== %s\n' "$*" >&2; }

# apt_install PACKAGE... installs Debian packages (as root, or through sudo).
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

# ensure_redis installs redis-server when it is missing.
ensure_redis() {
  command -v redis-server >/dev/null || apt_install redis-server
}

# build_loadgen builds cmd/loadgen into bin/loadgen (run from the repository's
# root).
build_loadgen() {
  log "go build -o bin/loadgen ./cmd/loadgen"
  go build -o bin/loadgen ./cmd/loadgen
}

# ensure_chromium installs Debian's chromium (the browser tests drive it).
ensure_chromium() {
  command -v chromium >/dev/null || apt_install chromium
}

# ensure_proxies installs Debian's nginx and caddy: the forward-auth tests
# start them with the configs in deploy/ (internal/guard/proxies_test.go).
ensure_proxies() {
  local missing=()
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
  command -v caddy >/dev/null || missing+=(caddy)
  [ ${#missing[@]} = 0 ] || apt_install "${missing[@]}"
}

# ensure_pyjwt installs Debian's PyJWT with EdDSA (python3-jwt and
# python3-cryptography, for /usr/bin/python3): the interop test verifies the
# gateway's entry tokens with it (test/interop_test.go).
ensure_pyjwt() {
  /usr/bin/python3 -c 'import jwt; from jwt.algorithms import OKPAlgorithm' 2>/dev/null ||
    apt_install python3 python3-jwt python3-cryptography
}
