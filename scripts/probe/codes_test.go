package main

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/rs/xid"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// The exit codes are what scripts/services.sh acts on: 3 (login refused)
// on a server it has just installed makes it let root / postgres in, 2 says
// "start it". These tests run each probe against the real test servers
// (see internal/testenv), as a user that does not exist and at a port where
// nothing listens.

// closedAddr returns a 127.0.0.1 address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func requireCode(t *testing.T, err error, code int) {
	t.Helper()
	var pe *probeError
	require.Truef(t, errors.As(err, &pe), "want a probeError with code %d, got %v", code, err)
	require.Equal(t, code, pe.code, pe.msg)
}

func probeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), probeDeadline)
	t.Cleanup(cancel)
	return ctx
}

// unknownUser is a user name no test server has.
func unknownUser() string { return "rt_nouser_" + xid.New().String() }

func TestProbeMySQLCodes(t *testing.T) {
	t.Parallel()
	base := env("REFRESHER_TEST_MYSQL", defaultMySQL)
	name, version, err := probeMySQL(probeCtx(t), base)
	require.NoError(t, err)
	require.Contains(t, []string{"MariaDB", "MySQL"}, name)
	require.NoError(t, checkVersion(name, version))

	cfg, err := mysql.ParseDSN(base)
	require.NoError(t, err)
	cfg.User, cfg.Passwd = unknownUser(), "x"
	_, _, err = probeMySQL(probeCtx(t), cfg.FormatDSN())
	requireCode(t, err, exitLogin)

	cfg, _ = mysql.ParseDSN(base)
	cfg.Addr = closedAddr(t)
	_, _, err = probeMySQL(probeCtx(t), cfg.FormatDSN())
	requireCode(t, err, exitNoAnswer)
}

func TestProbeRedisCodes(t *testing.T) {
	t.Parallel()
	base := testenv.RedisURL()
	name, version, err := probeRedis(probeCtx(t), base)
	require.NoError(t, err)
	require.Equal(t, "Redis", name)
	require.NoError(t, checkVersion(name, version))

	u, err := url.Parse(base)
	require.NoError(t, err)
	u.User = url.UserPassword(unknownUser(), "x") // ACL users: Redis 6+
	_, _, err = probeRedis(probeCtx(t), u.String())
	requireCode(t, err, exitLogin)

	u, _ = url.Parse(base)
	u.Host = closedAddr(t)
	_, _, err = probeRedis(probeCtx(t), u.String())
	requireCode(t, err, exitNoAnswer)
}

func TestProbePostgresCodes(t *testing.T) {
	t.Parallel()
	base := os.Getenv("REFRESHER_TEST_POSTGRES")
	if base == "" {
		base = defaultPostgres
	}
	name, version, err := probePostgres(probeCtx(t), base)
	require.NoError(t, err)
	require.Equal(t, "PostgreSQL", name)
	require.NoError(t, checkVersion(name, version))

	u, err := url.Parse(base)
	require.NoError(t, err)
	u.User = url.UserPassword(unknownUser(), "x")
	_, _, err = probePostgres(probeCtx(t), u.String())
	requireCode(t, err, exitLogin)

	u, _ = url.Parse(base)
	u.Host = closedAddr(t)
	_, _, err = probePostgres(probeCtx(t), u.String())
	requireCode(t, err, exitNoAnswer)
	require.Contains(t, err.Error(), "no PostgreSQL answers at "+u.Host)
}
