#!/usr/bin/env bash
# Runs `make test` (or another command) on a fresh Debian 12 machine where
# MariaDB, PostgreSQL, Redis and Chromium are missing, to check that the
# test setup (.ci/run, make test: scripts/services.sh, scripts/probe,
# scripts/browser.sh, scripts/cc.sh) installs and starts them itself. See
# CONTRIBUTING.md.
#
# As root:
#
#   scripts/fresh-machine.sh                  # .ci/run (make test) on a fresh root
#   scripts/fresh-machine.sh -- scripts/services.sh
#   scripts/fresh-machine.sh --keep -- bash   # reuse the last run's root, a shell
#   scripts/fresh-machine.sh --fresh-go       # Go's caches empty too
#
# (With sudo: sudo env "PATH=$PATH" scripts/fresh-machine.sh, as sudo's own
# PATH may not have Go.)
#
# The "machine" is a chroot in a network namespace of its own:
#
#   - ROOT/base: a minimal Debian 12 (debootstrap --variant=minbase, plus
#     make, git and ca-certificates, with bookworm, bookworm-updates and
#     bookworm-security as apt sources), made once; delete it to make a new one;
#   - ROOT/upper: what a run changes (apt installs, the servers' data), an
#     overlay over base, emptied before each run unless --keep;
#   - ROOT/go: the chroot's Go module and build caches (/root/go,
#     /root/.cache/go-build), kept between runs so that only the first one
#     downloads the modules and compiles the standard library (several
#     minutes on a busy machine); --fresh-go empties them first;
#   - ROOT/merged: the overlay, the chroot's /. The repository is cloned at
#     its committed HEAD to /src/refresher (commit what you want to check
#     first); Go is the host's own (go env GOROOT), mounted read-only at the
#     same path.
#
# The network namespace (default "refresher-fresh") has its own loopback, so
# the servers started in it listen on its own 127.0.0.1:3306, 5432 and 6379
# and never meet the host's servers, which stay untouched. A veth pair
# (10.213.0.1/30 on the host, 10.213.0.2/30 inside; see FRESH_SLOT) and an iptables
# MASQUERADE rule give it the internet, for apt-get and the Go module proxy;
# net.ipv4.ip_forward is set to 1 for the run. Everything the run set up is
# undone at its end: the processes left in the namespace (the servers) are
# stopped by their ids, the mounts, the namespace, the veth, the rule and
# ip_forward are removed or restored. ROOT stays, for the next run or a look
# at the logs (ROOT/upper/var/log, ROOT/upper/var/lib/postgresql/...).
#
# Needs root on a Linux host with debootstrap, iproute2 and iptables
# (apt-get install debootstrap iptables), and Go on the host (GO, default
# go on PATH).
#
# Environment:
#   FRESH_ROOT    the folder for base, upper and merged (default /var/tmp/refresher-fresh);
#                 keep it outside the repository
#   FRESH_NETNS   the network namespace's name (default refresher-fresh)
#   FRESH_SLOT    0-99, for runs side by side (each with its own FRESH_ROOT
#                 and FRESH_NETNS): the veth pair is veth-rfreshSLOT{h,n}
#                 on 10.213.SLOT.0/30 (default 0)
#   FRESH_MIRROR  the Debian mirror (default http://deb.debian.org/debian)
#   FRESH_DNS     a name server for the chroot (default: the first
#                 non-loopback one of the host's /etc/resolv.conf)
#   FRESH_CA_FILE a PEM bundle of certificate authorities for the chroot's Go,
#                 for a network that intercepts TLS (default: the host's
#                 SSL_CERT_FILE when set; none otherwise)
#   FRESH_USER    run the command as this user, created without sudo (to
#                 check what the scripts say when they cannot install)
set -euo pipefail
{ # read whole before it runs, so that editing this file during a run is safe

repo=$(cd "$(dirname "$0")/.." && pwd)
root=${FRESH_ROOT:-/var/tmp/refresher-fresh}
ns=${FRESH_NETNS:-refresher-fresh}
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
log() { echo "fresh-machine: $*" >&2; }
die() { log "$*"; exit 1; }

slot=${FRESH_SLOT:-0}
case $slot in [0-9] | [1-9][0-9]) ;; *) die "FRESH_SLOT=$slot: use a number from 0 to 99" ;; esac
host_if=veth-rfresh${slot}h ns_if=veth-rfresh${slot}n
host_ip=10.213.$slot.1 ns_ip=10.213.$slot.2 net=10.213.$slot.0/30


keep= fresh_go=
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1; shift ;;
	--fresh-go) fresh_go=1; shift ;;
	--) shift; break ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//; s/^#$//'; exit 0 ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
done
[ $# -gt 0 ] || set -- .ci/run # CI's command: make test

[ "$(id -u)" = 0 ] || die "needs root (it makes a network namespace, mounts and a chroot): run it with sudo"
GO=${GO:-go}
for cmd in debootstrap ip iptables git "$GO"; do
	command -v "$cmd" >/dev/null || die "needs $cmd on the host (apt-get install debootstrap iproute2 iptables git; Go from go.dev, on PATH or named by GO)"
done
case $root in "$repo" | "$repo"/*) die "FRESH_ROOT=$root is inside the repository: choose a folder outside it" ;; esac
goroot=$("$GO" env GOROOT)

mkdir -p "$root"
exec 9>"$root/.lock"
flock -n 9 || die "another fresh-machine run uses $root"

# --- the base system, made once -------------------------------------------
if [ ! -f "$root/base/etc/debian_version" ]; then
	log "debootstrap Debian 12 into $root/base (a few minutes)"
	rm -rf "$root/base.new"
	debootstrap --variant=minbase --include=make,git,ca-certificates bookworm "$root/base.new" "$mirror" >"$root/debootstrap.log" 2>&1 ||
		die "debootstrap failed, see $root/debootstrap.log"
	cat >"$root/base.new/etc/apt/sources.list" <<-EOF
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb http://deb.debian.org/debian-security bookworm-security main
	EOF
	rm -rf "$root/base.new/var/cache/apt/archives"/*.deb
	mv "$root/base.new" "$root/base"
fi

# --- undo everything at exit ---------------------------------------------
forward_was=$(sysctl -n net.ipv4.ip_forward)
mounted=()
ns_exists() { ip netns list | awk '{ print $1 }' | grep -qxF "$ns"; }
cleanup() {
	set +e
	if ns_exists; then
		local pids
		pids=$(ip netns pids "$ns")
		if [ -n "$pids" ]; then
			log "stopping the processes left in the namespace: $(echo $pids)"
			# shellcheck disable=SC2086
			kill $pids 2>/dev/null
			for _ in $(seq 1 40); do [ -z "$(ip netns pids "$ns")" ] && break; sleep 0.5; done
			pids=$(ip netns pids "$ns")
			# shellcheck disable=SC2086
			[ -z "$pids" ] || kill -9 $pids 2>/dev/null
		fi
		ip netns del "$ns"
	fi
	ip link del "$host_if" 2>/dev/null
	iptables -t nat -D POSTROUTING -s "$net" ! -o "$host_if" -j MASQUERADE -m comment --comment refresher-fresh 2>/dev/null
	iptables -D FORWARD -i "$host_if" -j ACCEPT -m comment --comment refresher-fresh 2>/dev/null
	iptables -D FORWARD -o "$host_if" -j ACCEPT -m comment --comment refresher-fresh 2>/dev/null
	# Another slot's run still needs forwarding: the last one restores it.
	ip -o link show | grep -q 'veth-rfresh[0-9]*h' || sysctl -qw net.ipv4.ip_forward="$forward_was"
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mnt() { # mount ARGS... TARGET (the last argument is the mount point)
	mount "$@"
	mounted+=("${!#}")
}

# --- the network namespace ------------------------------------------------
if ns_exists; then die "network namespace $ns exists: another run, or one that was killed (ip netns del $ns)"; fi
if ip link show "$host_if" >/dev/null 2>&1; then die "$host_if exists: another run uses FRESH_SLOT=$slot (choose another)"; fi
ip netns add "$ns"
ip -n "$ns" link set lo up
ip link add "$host_if" type veth peer name "$ns_if" netns "$ns"
ip addr add "$host_ip/30" dev "$host_if"
ip link set "$host_if" up
ip -n "$ns" addr add "$ns_ip/30" dev "$ns_if"
ip -n "$ns" link set "$ns_if" up
ip -n "$ns" route add default via "$host_ip"
sysctl -qw net.ipv4.ip_forward=1
iptables -t nat -A POSTROUTING -s "$net" ! -o "$host_if" -j MASQUERADE -m comment --comment refresher-fresh
iptables -I FORWARD -i "$host_if" -j ACCEPT -m comment --comment refresher-fresh
iptables -I FORWARD -o "$host_if" -j ACCEPT -m comment --comment refresher-fresh

# --- the root: an overlay over base ---------------------------------------
if [ -z "$keep" ]; then rm -rf "$root/upper" "$root/work"; fi
mkdir -p "$root/upper" "$root/work" "$root/merged"
mnt -t overlay overlay -o "lowerdir=$root/base,upperdir=$root/upper,workdir=$root/work" "$root/merged"
r=$root/merged
mnt -t proc proc "$r/proc"
mnt -t sysfs sysfs "$r/sys"
mnt --bind /dev "$r/dev"
mnt -t devpts devpts -o newinstance,ptmxmode=0666 "$r/dev/pts"
mnt -t tmpfs tmpfs -o mode=1777 "$r/dev/shm"
mnt -t tmpfs tmpfs -o mode=755 "$r/run"
mkdir -p "$r$goroot"
mnt --bind -o ro "$goroot" "$r$goroot"
if [ -n "$fresh_go" ]; then rm -rf "$root/go"; fi
mkdir -p "$root/go/mod" "$root/go/build" "$r/root/go" "$r/root/.cache/go-build"
mnt --bind "$root/go/mod" "$r/root/go"
mnt --bind "$root/go/build" "$r/root/.cache/go-build"

dns=${FRESH_DNS:-$(awk '$1 == "nameserver" && $2 !~ /^(127\.|::1$)/ { print $2; exit }' /etc/resolv.conf)}
[ -n "$dns" ] || die "the host's /etc/resolv.conf names only loopback name servers, which the namespace cannot reach: set FRESH_DNS"
rm -f "$r/etc/resolv.conf"
echo "nameserver $dns" >"$r/etc/resolv.conf"

if [ ! -d "$r/src/refresher/.git" ]; then
	log "cloning $repo at $(git -C "$repo" rev-parse --short HEAD) to /src/refresher"
	mkdir -p "$r/src"
	git clone --quiet --no-hardlinks "$repo" "$r/src/refresher"
	git -C "$r/src/refresher" checkout --quiet --detach "$(git -C "$repo" rev-parse HEAD)"
fi

ca=()
ca_file=${FRESH_CA_FILE:-${SSL_CERT_FILE:-}}
if [ -n "$ca_file" ]; then
	cp "$ca_file" "$r/etc/ssl/fresh-machine-ca.crt"
	ca=(SSL_CERT_FILE=/etc/ssl/fresh-machine-ca.crt)
fi

home=/root
as=()
if [ -n "${FRESH_USER:-}" ]; then
	chroot "$r" id -u "$FRESH_USER" >/dev/null 2>&1 || chroot "$r" useradd --create-home "$FRESH_USER"
	chroot "$r" chown -R "$FRESH_USER:" /src/refresher
	home=/home/$FRESH_USER
	as=(setpriv --reuid="$FRESH_USER" --regid="$FRESH_USER" --init-groups)
fi

log "running in the fresh root (netns $ns): $*"
rc=0
ip netns exec "$ns" chroot "$r" "${as[@]}" env -i HOME="$home" USER="${FRESH_USER:-root}" LANG=C.UTF-8 TERM="${TERM:-dumb}" "${ca[@]}" \
	PATH="$goroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
	bash -c 'cd /src/refresher && exec "$@"' fresh "$@" || rc=$?
log "the command exited with $rc"
exit "$rc"
}
