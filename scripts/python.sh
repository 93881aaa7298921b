#!/usr/bin/env bash
# Makes sure a python3 that can import redis-py is there, which the tests of
# the README's Python worker (examples/worker.py: worker/python_example_test.go
# and the trace test in e2e/) need. A python3 on PATH or /usr/bin/python3
# that already imports redis is used as it is; otherwise Debian's
# python3-redis package is installed (it brings /usr/bin/python3). Needs root
# or passwordless sudo for the install; elsewhere `pip install redis`.
set -euo pipefail

log() { echo "python: $*" >&2; }
for py in python3 /usr/bin/python3; do
	if command -v "$py" >/dev/null && "$py" -c 'import redis' 2>/dev/null; then exit 0; fi
done
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; return; fi
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; return; fi
	log "no python3 with redis-py for the Python worker's tests, and installing Debian's python3-redis needs root or passwordless sudo: pip install redis"
	exit 1
}
command -v apt-get >/dev/null || { log "no python3 with redis-py, and no apt-get: pip install redis"; exit 1; }
log "installing Debian's python3-redis for the Python worker's tests"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-redis >/dev/null
/usr/bin/python3 -c 'import redis' || { log "python3-redis is installed but /usr/bin/python3 cannot import redis"; exit 1; }
