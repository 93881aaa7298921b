// Package testenv gives integration tests their own MariaDB/MySQL database
// and their own Redis key prefix on the real servers, so tests run in
// parallel without seeing each other. There are no mocks: when a server is
// unreachable the test fails with a message that says how to start it
// (`make test` starts both).
//
// Environment:
//
//	REFRESHER_TEST_MYSQL  base DSN, default "root:@tcp(127.0.0.1:3306)/"
//	REFRESHER_TEST_REDIS  Redis URL, default "redis://127.0.0.1:6379/0"
//	REFRESHER_TEST_POSTGRES  PostgreSQL URL (see PostgresURL), default
//	                      "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/rs/xid"
)

const (
	defaultMySQL = "root:@tcp(127.0.0.1:3306)/"
	defaultRedis = "redis://127.0.0.1:6379/0"
	startHint    = "start MariaDB and Redis with `make services` (or run `make test`)"
)

// MySQLDSN creates a fresh, empty database for this test and returns a DSN
// for it (parseTime=true, loc=UTC). The database is dropped when the test
// ends.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("REFRESHER_TEST_MYSQL")
	if base == "" {
		base = defaultMySQL
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("parse REFRESHER_TEST_MYSQL %q: %v", base, err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.DBName = ""
	root, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open MySQL: %v", err)
	}
	defer root.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := root.PingContext(ctx); err != nil {
		t.Fatalf("connect to MySQL at %s: %v (%s)", cfg.Addr, err, startHint)
	}
	name := "rt_" + xid.New().String()
	if _, err := root.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// DB opens a fresh database for this test (see MySQLDSN) and closes it when
// the test ends.
func DB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	dsn := MySQLDSN(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("open MySQL: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

// RedisURL returns the Redis URL tests use.
func RedisURL() string {
	if u := os.Getenv("REFRESHER_TEST_REDIS"); u != "" {
		return u
	}
	return defaultRedis
}

// Redis returns a client of the test Redis and a key prefix that is unique to
// this test ("test:<xid>:"). Keys under the prefix are deleted when the test
// ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("parse REFRESHER_TEST_REDIS: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("connect to Redis at %s: %v (%s)", opt.Addr, err, startHint)
	}
	prefix := "test:" + xid.New().String() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			_ = rdb.Del(ctx, keys...).Err()
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}

// Name turns a test name into a string usable as a kind or table name.
func Name(t testing.TB) string {
	r := strings.NewReplacer("/", "_", " ", "_", "-", "_", "#", "_")
	n := strings.ToLower(r.Replace(t.Name()))
	if len(n) > 40 {
		n = n[:40]
	}
	return fmt.Sprintf("%s_%s", n, xid.New().String()[12:])
}
