package testenv

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/xid"
)

// defaultPostgres is REFRESHER_TEST_POSTGRES's default: the local server's
// superuser over TCP, trust authentication.
const defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PostgresURL creates a fresh, empty PostgreSQL database for this test and
// returns a postgres:// URL for it. The database is dropped (WITH (FORCE),
// closing connections the test left open) when the test ends.
//
// The server is REFRESHER_TEST_POSTGRES (a postgres:// URL of a user that
// may CREATE DATABASE), default
// "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable".
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("REFRESHER_TEST_POSTGRES")
	if base == "" {
		base = defaultPostgres
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse REFRESHER_TEST_POSTGRES: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to PostgreSQL at %s: %v (start PostgreSQL on 127.0.0.1:5432 with user postgres, trust authentication, or set REFRESHER_TEST_POSTGRES)", u.Host, err)
	}
	defer conn.Close(context.Background())
	name := "rt_" + xid.New().String()
	if _, err := conn.Exec(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	})
	u.Path = "/" + name
	return u.String()
}
