#!/usr/bin/env bash
# Makes sure a Chromium binary is on this machine for the dashboard's browser
# tests (operator/browser_test.go drives it headless with chromedp). One that
# REFRESHER_CHROMIUM names, or that is on PATH (chromium, chromium-browser,
# google-chrome), is used as it is; otherwise Debian's `chromium` package is
# installed (apt-get update, then apt-get install -y --no-install-recommends
# chromium). The install needs apt-get and root or passwordless sudo; without
# them the script stops and says so, so that `make test` does not pass with
# the browser tests skipped: install Chromium yourself, or set
# REFRESHER_CHROMIUM to its binary.
set -euo pipefail

log() { echo "browser: $*" >&2; }
die() { log "$*"; exit 1; }
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; return; fi
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; return; fi
	die "no Chromium found, and installing Debian's chromium needs root or passwordless sudo: install Chromium yourself, or set REFRESHER_CHROMIUM to its binary"
}

if [ -n "${REFRESHER_CHROMIUM:-}" ]; then
	[ -x "$REFRESHER_CHROMIUM" ] || command -v "$REFRESHER_CHROMIUM" >/dev/null ||
		die "REFRESHER_CHROMIUM=$REFRESHER_CHROMIUM is not an executable: set it to the Chromium or Chrome binary"
	exit 0
fi
for bin in chromium chromium-browser google-chrome; do
	if command -v "$bin" >/dev/null; then exit 0; fi
done
command -v apt-get >/dev/null ||
	die "no Chromium found (chromium, chromium-browser, google-chrome), and no apt-get to install it: install Chromium yourself, or set REFRESHER_CHROMIUM to its binary"
log "installing Debian's chromium for the dashboard's browser tests"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null || die "chromium is still missing after the install"
