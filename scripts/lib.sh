# Shared by the scripts in this folder: source it, do not run it.

# log prints a progress line to stderr.
log() { printf '== %s\n' "$*" >&2; }

# as_root COMMAND... runs COMMAND as root: directly when root, else through
# sudo.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install PACKAGE... installs Debian packages (as root, or through sudo).
apt_install() {
  if ! command -v apt-get >/dev/null; then
    log "cannot install $* (no apt-get); tests that need them will skip, or fail with CI=true"
    return 0
  fi
  log "installing $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ensure_redis installs redis-server when it is missing.
ensure_redis() {
  command -v redis-server >/dev/null || apt_install redis-server
}

# ensure_locale makes the en_US.UTF-8 locale when it is missing: a test runs
# redis-server under it, whose Lua then compares strings by collation, not
# by bytes (internal/redisstore, TestJournalOrdersTiesByBytesUnderAnyLocale).
ensure_locale() {
  locale -a 2>/dev/null | grep -qix 'en_US.utf8' && return 0
  [ -f /usr/share/i18n/locales/en_US ] || apt_install locales
  log "localedef en_US.UTF-8"
  as_root localedef -i en_US -f UTF-8 en_US.UTF-8
}

# build_loadgen builds cmd/loadgen into bin/loadgen (run from the repository's
# root).
build_loadgen() {
  log "go build -o bin/loadgen ./cmd/loadgen"
  go build -o bin/loadgen ./cmd/loadgen
}

# ensure_chromium installs Debian's chromium (the browser tests drive it)
# and the Noto CJK fonts its screenshots of the Korean and Japanese pages
# need.
ensure_chromium() {
  command -v chromium >/dev/null || apt_install chromium
  fc-list :lang=ko 2>/dev/null | grep -q . || apt_install fonts-noto-cjk
}

# ensure_proxies installs Debian's nginx and caddy: the forward-auth tests
# start them with the configs in deploy/ (internal/guard/proxies_test.go).
ensure_proxies() {
  local missing=()
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
  command -v caddy >/dev/null || missing+=(caddy)
  [ ${#missing[@]} = 0 ] && return 0
  apt_install "${missing[@]}"
  # The packages may start their system services (nginx on :80): the tests
  # run their own, so stop those the install just started.
  local svc
  for svc in "${missing[@]}"; do
    if command -v service >/dev/null; then service "$svc" stop >/dev/null 2>&1 || true; fi
  done
}

# ensure_pyjwt installs Debian's PyJWT with EdDSA (python3-jwt and
# python3-cryptography, for /usr/bin/python3): the interop test verifies the
# gateway's entry tokens with it (test/interop_test.go).
ensure_pyjwt() {
  /usr/bin/python3 -c 'import jwt; from jwt.algorithms import OKPAlgorithm' 2>/dev/null ||
    apt_install python3 python3-jwt python3-cryptography
}

# ensure_aiosmtpd installs Debian's aiosmtpd (python3-aiosmtpd, for
# /usr/bin/python3): the mail tests send through it, a real SMTP server
# (internal/testkit/testsmtp).
ensure_aiosmtpd() {
  /usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || apt_install python3 python3-aiosmtpd
}

# ensure_node_jose installs Debian's node-jose (panva's jose 4.x, under
# /usr/share/nodejs) and node when missing: the interop test verifies the
# gateway's entry tokens with it too (test/interop_test.go).
ensure_node_jose() {
  local missing=()
  command -v node >/dev/null || missing+=(nodejs)
  [ -f /usr/share/nodejs/jose/package.json ] || missing+=(node-jose)
  [ ${#missing[@]} = 0 ] || apt_install "${missing[@]}"
}

# ensure_prometheus installs Debian's prometheus (prometheus and promtool:
# test/monitoring checks the rules and scrapes a devstack with it).
ensure_prometheus() {
  command -v promtool >/dev/null && command -v prometheus >/dev/null || apt_install prometheus
}

# ensure_helm builds helm from the Go module proxy (not a dependency of the
# module) into the user's cache once, and exports WAITQ_HELM for test/helm.
ensure_helm() {
  local version=v3.19.5
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/waitq/helm-$version"
  if [ ! -x "$dir/helm" ]; then
    log "go install helm.sh/helm/v3/cmd/helm@$version (once, into $dir)"
    mkdir -p "$dir"
    (cd "$dir" && GOBIN="$dir" GOFLAGS= GOWORK=off CGO_ENABLED=0 timeout 900 go install "helm.sh/helm/v3/cmd/helm@$version") ||
      log "could not build helm: test/helm will skip, or fail with CI=true"
  fi
  [ -x "$dir/helm" ] && export WAITQ_HELM="$dir/helm"
  return 0
}

# redis_child DIR starts a throwaway redis-server (no persistence, its files
# in DIR) on a free loopback port and waits until it answers: sets port
# and rs (its pid, for the caller to kill).
redis_child() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$1" >"$1/redis.log" 2>&1 &
  rs=$!
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

# write_reports OUT TITLE INTRO REPORT... writes a bench file: the title, the
# intro line, the machine (cores, kernel, load average, redis-server and Go
# versions), then each report in a fenced block; then logs and prints it.
write_reports() {
  local out=$1 title=$2 intro=$3 r
  shift 3
  mkdir -p "$(dirname "$out")"
  {
    echo "# $title"
    echo
    echo "$intro"
    echo
    echo "- machine: $(nproc) cores, $(uname -sr); load average: $(cut -d' ' -f1-3 /proc/loadavg); redis-server $(redis-server --version | grep -oE 'v=[^ ]+' | cut -d= -f2), $(go version | cut -d' ' -f3-4)"
    for r in "$@"; do
      echo
      echo '```'
      echo "$r"
      echo '```'
    done
  } >"$out"
  log "written to $out"
  cat "$out"
}
