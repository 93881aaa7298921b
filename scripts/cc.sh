#!/usr/bin/env bash
# Makes sure Go finds a C compiler, which `make test` needs for the race
# detector (go test -race requires cgo, and Go turns cgo off when `go env CC`
# is not on PATH, as on a fresh Debian). One that is already installed is
# used as it is; otherwise Debian's `gcc` package is installed (apt-get
# update, then apt-get install -y --no-install-recommends gcc libc6-dev).
# Needs root or passwordless sudo for the install; elsewhere install gcc (or
# clang, with CC=clang) yourself.
set -euo pipefail

GO=${GO:-go}
log() { echo "cc: $*" >&2; }
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; return; fi
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; return; fi
	log "no C compiler (gcc) for the race detector, and installing Debian's gcc needs root or passwordless sudo: install gcc yourself"
	exit 1
}

if [ "${CGO_ENABLED:-}" = 0 ]; then
	log "CGO_ENABLED=0 is set, but make test runs the race detector, which needs cgo: unset it"
	exit 1
fi
cc=$("$GO" env CC)
cc=${cc%% *} # CC may carry flags ("gcc -m64")
if command -v "$cc" >/dev/null; then exit 0; fi
[ "$cc" = gcc ] || { log "the C compiler $cc (go env CC) is not on PATH: install it, or set CC to one that is"; exit 1; }
command -v apt-get >/dev/null || { log "no C compiler (gcc) for the race detector, and no apt-get to install one: install gcc yourself"; exit 1; }
log "installing Debian's gcc for the race detector (go test -race needs cgo)"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
command -v gcc >/dev/null || { log "gcc is still missing after the install"; exit 1; }
