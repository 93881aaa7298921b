// Command probe checks that one of the servers the tests use answers, lets
// the tests' user in and is recent enough, with the same environment
// variables as the tests (see internal/testenv):
//
//	go run ./scripts/probe mysql      REFRESHER_TEST_MYSQL, default "root:@tcp(127.0.0.1:3306)/"
//	go run ./scripts/probe redis      REFRESHER_TEST_REDIS, default "redis://127.0.0.1:6379/0"
//	go run ./scripts/probe postgres   REFRESHER_TEST_POSTGRES, default "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
//
// It prints the server and its version ("MariaDB 10.11.6") and exits 0, or
// says what is wrong on stderr and exits with 2 when nothing answers, 3 when
// the login is refused, 4 when the version is too old, 1 otherwise.
// scripts/services.sh runs it, so that checking needs no client binary.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

// Defaults, as in internal/testenv.
const (
	defaultMySQL    = "root:@tcp(127.0.0.1:3306)/"
	defaultRedis    = "redis://127.0.0.1:6379/0"
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
)

// Exit codes.
const (
	exitOther     = 1
	exitNoAnswer  = 2
	exitLogin     = 3
	exitTooOld    = 4
	probeDeadline = 5 * time.Second
)

// probeError carries an exit code.
type probeError struct {
	code int
	msg  string
}

func (e *probeError) Error() string { return e.msg }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe mysql|redis|postgres")
		os.Exit(exitOther)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeDeadline)
	defer cancel()
	var (
		name, version string
		err           error
	)
	switch os.Args[1] {
	case "mysql":
		name, version, err = probeMySQL(ctx, env("REFRESHER_TEST_MYSQL", defaultMySQL))
	case "redis":
		name, version, err = probeRedis(ctx, env("REFRESHER_TEST_REDIS", defaultRedis))
	case "postgres":
		name, version, err = probePostgres(ctx, env("REFRESHER_TEST_POSTGRES", defaultPostgres))
	default:
		err = &probeError{exitOther, "unknown server " + os.Args[1] + " (use mysql, redis or postgres)"}
	}
	if err == nil {
		err = checkVersion(name, version)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		var pe *probeError
		if errors.As(err, &pe) {
			os.Exit(pe.code)
		}
		os.Exit(exitOther)
	}
	fmt.Println(name, version)
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// minimum is the oldest version of each server the service supports.
var minimum = map[string][]int{"MariaDB": {10, 6}, "MySQL": {8, 0, 1}, "Redis": {6, 2}, "PostgreSQL": {13}}

var leadingVersion = regexp.MustCompile(`^\d+(\.\d+)*`)

// checkVersion compares the leading numbers of version with the minimum.
func checkVersion(name, version string) error {
	want := minimum[name]
	nums := strings.Split(leadingVersion.FindString(version), ".")
	for i, w := range want {
		var got int
		if i < len(nums) {
			got, _ = strconv.Atoi(nums[i])
		}
		if got > w {
			return nil
		}
		if got < w {
			wantText := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(want)), "."), "[]")
			return &probeError{exitTooOld, fmt.Sprintf("%s %s is too old: the tests need %s %s or later", name, version, name, wantText)}
		}
	}
	return nil
}

// noAnswer turns a dial error into exit code 2.
func noAnswer(what, addr string, err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, context.DeadlineExceeded) {
		return &probeError{exitNoAnswer, fmt.Sprintf("no %s answers at %s: %v", what, addr, err)}
	}
	return err
}

func probeMySQL(ctx context.Context, dsn string) (name, version string, err error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", "", fmt.Errorf("REFRESHER_TEST_MYSQL %q: %w", dsn, err)
	}
	cfg.DBName = ""
	cfg.Timeout = 3 * time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return "", "", err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		var myErr *mysql.MySQLError
		if errors.As(err, &myErr) && (myErr.Number == 1045 || myErr.Number == 1698) {
			return "", "", &probeError{exitLogin, fmt.Sprintf("MySQL/MariaDB at %s refuses user %q: %v", cfg.Addr, cfg.User, err)}
		}
		return "", "", noAnswer("MySQL/MariaDB", cfg.Addr, err)
	}
	if strings.Contains(version, "MariaDB") {
		return "MariaDB", version, nil
	}
	return "MySQL", version, nil
}

func probeRedis(ctx context.Context, url string) (name, version string, err error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return "", "", fmt.Errorf("REFRESHER_TEST_REDIS %q: %w", url, err)
	}
	opt.DialTimeout, opt.MaxRetries = 3*time.Second, -1
	redis.SetLogger(quietLogger{}) // the error below says it all
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS") {
			return "", "", &probeError{exitLogin, fmt.Sprintf("Redis at %s refuses the login: %v", opt.Addr, err)}
		}
		return "", "", noAnswer("Redis", opt.Addr, err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "Redis", v, nil
		}
	}
	return "", "", fmt.Errorf("Redis at %s: INFO names no redis_version", opt.Addr)
}

func probePostgres(ctx context.Context, url string) (name, version string, err error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "", "", fmt.Errorf("REFRESHER_TEST_POSTGRES %q: %w", url, err)
	}
	cfg.ConnectTimeout = 3 * time.Second
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "28") { // invalid authorization / password
			return "", "", &probeError{exitLogin, fmt.Sprintf("PostgreSQL at %s refuses user %q: %v", addr, cfg.User, err)}
		}
		return "", "", noAnswer("PostgreSQL", addr, err)
	}
	defer conn.Close(context.Background())
	return "PostgreSQL", conn.ParameterStatus("server_version"), nil
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
