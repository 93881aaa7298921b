#!/usr/bin/env bash
# Makes sure the servers the tests need are up on this machine:
#   MariaDB (or MySQL) on 127.0.0.1:3306, user root with an empty password
#   Redis on 127.0.0.1:6379
# A server that already answers is used as it is. One that does not answer is
# started, and installed first from Debian's packages (mariadb-server,
# redis-server) when it is missing. Needs root or passwordless sudo for the
# install; elsewhere start the two servers yourself and this script only checks.
set -euo pipefail

MYSQL_HOST=127.0.0.1 MYSQL_PORT=3306 REDIS_HOST=127.0.0.1 REDIS_PORT=6379

log() { echo "services: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else log "need root for: $*"; return 1; fi; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_for() { # name host port
	for _ in $(seq 1 60); do port_open "$2" "$3" && return 0; sleep 0.5; done
	log "$1 did not start listening on $2:$3"; return 1
}
apt_updated=
apt_install() {
	if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
mysql_root_ok() { mariadb -h "$MYSQL_HOST" -P "$MYSQL_PORT" -uroot --connect-timeout=3 -e 'SELECT 1' >/dev/null 2>&1; }

ensure_redis() {
	if port_open "$REDIS_HOST" "$REDIS_PORT"; then return 0; fi
	command -v redis-server >/dev/null || { log "installing redis-server"; apt_install redis-server; }
	log "starting Redis"
	as_root mkdir -p /var/lib/redis /var/log/redis
	as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
		--dir /var/lib/redis --logfile /var/log/redis/refresher-test.log
	wait_for Redis "$REDIS_HOST" "$REDIS_PORT"
}

ensure_mariadb() {
	if ! port_open "$MYSQL_HOST" "$MYSQL_PORT"; then
		command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || { log "installing mariadb-server"; apt_install mariadb-server mariadb-client; }
		log "starting MariaDB"
		as_root mkdir -p /run/mysqld
		as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
		if [ ! -d /var/lib/mysql/mysql ]; then as_root mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null; fi
		as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql --bind-address=127.0.0.1 --port="$MYSQL_PORT"
		wait_for MariaDB "$MYSQL_HOST" "$MYSQL_PORT"
	fi
	command -v mariadb >/dev/null || apt_install mariadb-client
	for _ in $(seq 1 30); do mysql_root_ok && return 0; mariadb -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.5; done
	if ! mysql_root_ok; then
		# A fresh Debian install lets root in over the socket only: allow root
		# with an empty password over TCP as well, for the tests.
		log "allowing root with an empty password on 127.0.0.1"
		as_root mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
			CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
			GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;"
	fi
	mysql_root_ok || { log "cannot log in to MariaDB at $MYSQL_HOST:$MYSQL_PORT as root with an empty password"; return 1; }
}

ensure_redis
ensure_mariadb
log "MariaDB on $MYSQL_HOST:$MYSQL_PORT and Redis on $REDIS_HOST:$REDIS_PORT are up"
