#!/usr/bin/env bash
# Makes sure the binaries the Redis Cluster and Sentinel tests start are
# installed: redis-server, redis-cli and redis-sentinel (Debian's packages
# redis-server and redis-sentinel), installing the missing ones. The tests
# start their own servers from them (internal/testenv/topology.go): a
# cluster of 3 masters and 3 replicas, and one master, one replica and 3
# sentinels, on free ports of 127.0.0.1 in temporary folders, removed when
# each test ends. Installing needs root or passwordless sudo.
set -euo pipefail

log() { echo "redis-topologies: $*" >&2; }
die() { log "$*"; exit 1; }
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; return; fi
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; return; fi
	die "need root or passwordless sudo to run: $*. Run it so, or install Debian's redis-server and redis-sentinel yourself"
}

missing=()
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || missing+=(redis-server)
command -v redis-sentinel >/dev/null || missing+=(redis-sentinel)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
command -v apt-get >/dev/null || die "cannot install ${missing[*]} here: no apt-get (install them yourself)"
log "installing ${missing[*]} from Debian's packages"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the packaged services; the tests need only the binaries.
for s in redis-sentinel; do
	if command -v systemctl >/dev/null && systemctl is-active --quiet "$s" 2>/dev/null; then
		as_root systemctl stop "$s" || true
	fi
done
