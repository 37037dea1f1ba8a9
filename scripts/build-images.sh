#!/usr/bin/env bash
# Builds the images the container suite (test/integration) runs, with no
# image registry:
#   waitq/producer-api, waitq/ingest-consumer, waitq/ws-gateway,
#   waitq/waitq-rebuild, waitq/kfake-broker
#                        FROM scratch, one static Go binary each
#   waitq/redis          Debian bookworm (debootstrap --variant=minbase) with
#                        redis-server, made into an image by `docker import`
# The service images are rebuilt every run (seconds); the Redis image only
# when it is missing or WAITQ_REBUILD_REDIS=1, and not at all when
# WAITQ_IT_REDIS_IMAGE names another. Tag: $WAITQ_IMAGE_TAG (it).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

tag=${WAITQ_IMAGE_TAG:-it}
label=io.waitq.test=integration
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

log "building static binaries"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/bin/" \
  ./cmd/producer-api ./cmd/ingest-consumer ./cmd/ws-gateway ./cmd/waitq-rebuild ./cmd/kfake-broker

# The broker keeps its log in /data, which must belong to the user it runs as.
mkdir -p "$work/bin/data"
for prog in producer-api ingest-consumer ws-gateway waitq-rebuild kfake-broker; do
  cat > "$work/Dockerfile.$prog" <<EOF
FROM scratch
COPY $prog /$prog
COPY --chown=65534:65534 data /data
USER 65534:65534
ENTRYPOINT ["/$prog"]
EOF
  # The legacy builder warns on every build that it is deprecated: show its
  # output only when the build fails.
  docker build -q --label "$label" -t "waitq/$prog:$tag" -f "$work/Dockerfile.$prog" "$work/bin" > "$work/build.log" 2>&1 || {
    cat "$work/build.log" >&2
    exit 1
  }
  log "built waitq/$prog:$tag"
done

# debian_mirror prints the Debian mirror apt is set up with on this machine.
debian_mirror() {
  local m
  m=$(grep -hoE '^URIs: *[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | sed 's/^URIs: *//') || true
  if [ -z "$m" ]; then
    m=$(grep -hoE '^deb +(\[[^]]*\] +)?[^ ]+' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $NF}') || true
  fi
  [ -n "$m" ] || { log "no Debian mirror found in apt's sources"; return 1; }
  echo "$m"
}

if [ -n "${WAITQ_IT_REDIS_IMAGE:-}" ]; then
  log "Redis image: $WAITQ_IT_REDIS_IMAGE (WAITQ_IT_REDIS_IMAGE); not building waitq/redis"
elif [ "${WAITQ_REBUILD_REDIS:-0}" = 1 ] || ! docker image inspect "waitq/redis:$tag" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || apt_install debootstrap
  root="$work/rootfs"
  mirror=$(debian_mirror)
  log "debootstrap bookworm with redis-server from $mirror (a few minutes, once)"
  debootstrap --variant=minbase --include=redis-server bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1 || {
    tail -30 "$work/debootstrap.log" >&2
    exit 1
  }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  cat > "$root/etc/redis/waitq.conf" <<'EOF'
# waitq's container suite: reachable from the other containers, in memory.
bind 0.0.0.0
protected-mode no
daemonize no
port 6379
dir /var/lib/redis
save ""
appendonly no
logfile ""
EOF
  tar -C "$root" -c . | docker import \
    -c 'USER redis' \
    -c 'EXPOSE 6379' \
    -c 'ENTRYPOINT ["/usr/bin/redis-server", "/etc/redis/waitq.conf"]' \
    -c "LABEL $label" \
    - "waitq/redis:$tag" >/dev/null
  log "built waitq/redis:$tag"
fi
