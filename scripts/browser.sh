#!/usr/bin/env bash
# Makes sure a Chromium binary is on this machine for the dashboard's browser
# tests (operator/browser_test.go drives it headless with chromedp). One that
# is already installed is used as it is; otherwise Debian's `chromium` package
# is installed (apt-get update once, then apt-get install -y chromium). Needs
# root or passwordless sudo for the install; elsewhere install Chromium
# yourself, or the browser tests skip with a message saying so.
set -euo pipefail

log() { echo "browser: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else log "need root for: $*"; return 1; fi; }

for bin in chromium chromium-browser google-chrome; do
	if command -v "$bin" >/dev/null; then exit 0; fi
done
log "installing Debian's chromium for the dashboard's browser tests"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null || { log "chromium is still missing after the install"; exit 1; }
