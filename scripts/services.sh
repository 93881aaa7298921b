#!/usr/bin/env bash
# Makes sure the servers the tests need answer, with the variables the tests
# use (see internal/testenv):
#   REFRESHER_TEST_MYSQL     default "root:@tcp(127.0.0.1:3306)/"   MariaDB >= 10.6 or MySQL >= 8.0.1
#   REFRESHER_TEST_REDIS     default "redis://127.0.0.1:6379/0"     Redis >= 6.2
#   REFRESHER_TEST_POSTGRES  default "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
#                                                                   PostgreSQL >= 13
# Checks run over TCP with scripts/probe (Go), so no client binary is needed.
#
# A variable that is set points at a server of yours: it is only checked,
# never installed or changed. For a default that does not answer, the server
# is started, and installed first from Debian's packages (mariadb-server,
# redis-server, postgresql) when it is missing; that needs root or
# passwordless sudo. The users and passwords of a server this run did not
# install are never changed: when its login fails, the script stops and says
# which variable to set.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}

log() { echo "services: $*" >&2; }
die() { log "$*"; exit 1; }
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; return; fi
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; return; fi
	die "need root or passwordless sudo to run: $*. Run it so, or install and start the server yourself (or point the REFRESHER_TEST_* variables at yours; see CONTRIBUTING.md)"
}
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_for() { # name host port log
	for _ in $(seq 1 60); do port_open "$2" "$3" && return 0; sleep 0.5; done
	die "$1 did not start listening on $2:$3 within 30 s: see its log, $4"
}
apt_updated=
apt_install() {
	command -v apt-get >/dev/null || die "cannot install $* here: no apt-get (install and start it yourself, or point the REFRESHER_TEST_* variables at your servers)"
	if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# build_probe builds scripts/probe once, into a temporary folder removed at
# exit. On a fresh machine this is where Go downloads the modules and
# compiles its standard library (a few minutes), so a failure here is told
# apart from a server that does not answer.
probe_bin=
build_probe() {
	local dir
	dir=$(mktemp -d)
	trap "rm -rf '$dir'" EXIT
	log "building scripts/probe (on a fresh machine Go downloads its modules first: a few minutes)"
	"$GO" build -o "$dir/probe" ./scripts/probe ||
		die "cannot build scripts/probe with $GO (see above): it needs Go $(sed -n 's/^go //p' go.mod) or later and the modules of go.mod (a GOPROXY it can reach, or go mod download beforehand)"
	probe_bin=$dir/probe
}

# probe SERVER: runs scripts/probe; prints the version line and returns its
# exit code (0 ok, 2 no answer, 3 login refused, 4 too old).
probe() { "$probe_bin" "$1"; }

# check SERVER VAR: for a server the variable VAR points at (or a default
# server this run did not install): it must answer, let the user in and be
# recent enough.
check() {
	local out rc=0
	out=$(probe "$1") || rc=$?
	case $rc in
	0) log "$1: $out" ;;
	3) die "$1: the login is refused (see above). This script never changes the users of a server it did not install: set $2 to a login that works (see CONTRIBUTING.md)" ;;
	4) die "$1: upgrade the server, or set $2 to a newer one" ;;
	*) die "$1: not usable (see above); start it, or set $2 to one that runs" ;;
	esac
}

ensure_redis() {
	if [ -n "${REFRESHER_TEST_REDIS:-}" ]; then check redis REFRESHER_TEST_REDIS; return; fi
	if ! port_open 127.0.0.1 6379; then
		command -v redis-server >/dev/null || { log "installing redis-server"; apt_install redis-server; }
	fi
	if ! port_open 127.0.0.1 6379; then # where systemd runs, the package has started it
		log "starting Redis"
		as_root mkdir -p /var/lib/redis /var/log/redis
		as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
			--dir /var/lib/redis --logfile /var/log/redis/refresher-test.log
		wait_for Redis 127.0.0.1 6379 /var/log/redis/refresher-test.log
	fi
	check redis REFRESHER_TEST_REDIS
}

ensure_mysql() {
	if [ -n "${REFRESHER_TEST_MYSQL:-}" ]; then check mysql REFRESHER_TEST_MYSQL; return; fi
	local fresh=
	if ! port_open 127.0.0.1 3306; then
		if ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ]; then
			if command -v mysqld >/dev/null || [ -x /usr/sbin/mysqld ]; then
				die "MySQL is installed but does not answer on 127.0.0.1:3306: start it (this script starts only MariaDB), or set REFRESHER_TEST_MYSQL"
			fi
			log "installing mariadb-server"
			apt_install mariadb-server mariadb-client
			fresh=1
		fi
		log "starting MariaDB"
		as_root mkdir -p /run/mysqld /var/log/mysql
		as_root chown mysql:mysql /run/mysqld /var/log/mysql 2>/dev/null || true
		if [ ! -d /var/lib/mysql/mysql ]; then as_root mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null; fresh=1; fi
		# --pidfile: a mariadbd that runs elsewhere on this machine (another
		# port, another container seen through a shared /proc) is not ours.
		as_root start-stop-daemon --start --oknodo --background --pidfile /run/mysqld/mysqld.pid --exec /usr/sbin/mariadbd -- \
			--user=mysql --bind-address=127.0.0.1 --port=3306 --pid-file=/run/mysqld/mysqld.pid --log-error=/var/log/mysql/refresher-test.log
		wait_for MariaDB 127.0.0.1 3306 /var/log/mysql/refresher-test.log
	fi
	local rc=0
	probe mysql >/dev/null 2>&1 || rc=$?
	if [ "$rc" = 3 ] && [ -n "$fresh" ]; then
		# This run installed the server, which lets root in over the socket
		# only: allow root with an empty password over TCP as well.
		log "allowing root with an empty password on 127.0.0.1 (new server)"
		as_root mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
			CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
			GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;"
	fi
	check mysql REFRESHER_TEST_MYSQL
}

# pg_bindir prints the bin directory of the newest installed PostgreSQL.
pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

# pg_init_start BINDIR DATADIR PORT: creates (when missing) and starts a
# cluster of its own in DATADIR, owned by the postgres user, listening on
# 127.0.0.1:PORT only, with trust authentication for TCP connections from
# 127.0.0.1 and ::1 (test servers only).
pg_init_start() {
	local bindir=$1 data=$2 port=$3
	as_root mkdir -p "$data" /run/postgresql
	as_root chown postgres:postgres "$data" /run/postgresql
	as_root chmod 700 "$data"
	if [ ! -f "$data/PG_VERSION" ]; then
		as_root runuser -u postgres -- "$bindir/initdb" -D "$data" -U postgres --auth-local=peer --auth-host=trust >/dev/null
	fi
	as_root runuser -u postgres -- "$bindir/pg_ctl" -D "$data" -l "$data/server.log" -w -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=/run/postgresql" start >/dev/null
}

# pg_cluster_on PORT prints "VERSION NAME" of the Debian cluster
# (pg_lsclusters) configured for PORT, if any.
pg_cluster_on() { command -v pg_lsclusters >/dev/null && pg_lsclusters -h 2>/dev/null | awk -v p="$1" '$3 == p { print $1, $2; exit }'; }

ensure_postgres() {
	if [ -n "${REFRESHER_TEST_POSTGRES:-}" ]; then check postgres REFRESHER_TEST_POSTGRES; return; fi
	local fresh= cluster
	if ! port_open 127.0.0.1 5432; then
		if [ -z "$(pg_bindir)" ]; then
			log "installing postgresql"
			apt_install postgresql
			fresh=1
		fi
		cluster=$(pg_cluster_on 5432 || true)
		if [ -n "$cluster" ]; then
			# A Debian cluster on 5432 (the package's, or one that did not
			# start after a reboot where nothing starts services, as in a
			# container): start it, as MariaDB and Redis are started.
			log "starting PostgreSQL cluster $cluster"
			# shellcheck disable=SC2086
			as_root pg_ctlcluster $cluster start 2>/dev/null || true
		else
			log "starting PostgreSQL (data in /var/lib/postgresql/refresher-test)"
			pg_init_start "$(pg_bindir)" /var/lib/postgresql/refresher-test 5432
		fi
		wait_for PostgreSQL 127.0.0.1 5432 "/var/log/postgresql/ (a Debian cluster) or /var/lib/postgresql/refresher-test/server.log"
	fi
	local rc=0
	probe postgres >/dev/null 2>&1 || rc=$?
	cluster=$(pg_cluster_on 5432 || true)
	if [ "$rc" = 3 ] && [ -n "$fresh" ] && [ -n "$cluster" ]; then
		# This run installed the server, whose cluster asks for a password
		# over TCP: let the user postgres in from 127.0.0.1 and ::1 without.
		log "allowing user postgres without a password on 127.0.0.1 (new server)"
		local hba
		hba=/etc/postgresql/${cluster% *}/${cluster#* }/pg_hba.conf
		as_root sed -i '1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust' "$hba"
		# shellcheck disable=SC2086
		as_root pg_ctlcluster $cluster reload
	fi
	check postgres REFRESHER_TEST_POSTGRES
}

main() {
	build_probe
	ensure_redis
	ensure_mysql
	ensure_postgres
	log "ready"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
