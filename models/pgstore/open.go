package pgstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// openHint ends connection errors: where the URL comes from.
const openHint = `check "database:" in the config or REFRESHER_DATABASE, and that PostgreSQL is running`

// Open opens a pool on the PostgreSQL database named by rawURL
// ("postgres://user:pass@host:5432/app?sslmode=disable"; "postgresql://"
// works too, and so do the libpq parameters pgx understands), with at most
// maxConns connections (default 16 when <= 0), and pings it. Every
// connection's TimeZone is UTC, whatever the URL says, and its
// application_name "refresher" unless the URL names one. Errors never show
// the password.
func Open(ctx context.Context, rawURL string, maxConns int) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL %s: %s (%s)", redactURL(rawURL), redactErr(err, rawURL), openHint)
	}
	if cfg.ConnConfig.Database == "" {
		return nil, fmt.Errorf("database URL %s names no database: add it after the slash, e.g. postgres://user@127.0.0.1:5432/app", redactURL(rawURL))
	}
	if maxConns <= 0 {
		maxConns = 16
	}
	cfg.MaxConns = int32(maxConns)
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "refresher"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("configure database %s: %s (%s)", redactURL(rawURL), redactErr(err, rawURL), openHint)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL at %s (database %q): %s (%s)", cfg.ConnConfig.Host, cfg.ConnConfig.Database, redactErr(err, rawURL), openHint)
	}
	return New(pool), nil
}

// redactErr is err's text without the URL's password.
func redactErr(err error, rawURL string) string {
	msg := err.Error()
	if pw := password(rawURL); pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return strings.ReplaceAll(msg, rawURL, redactURL(rawURL))
}

func password(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// redactURL returns rawURL with the password of its userinfo replaced.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		if i, j := strings.Index(rawURL, "://"), strings.LastIndex(rawURL, "@"); i >= 0 && j > i {
			return rawURL[:i+3] + "xxxxx" + rawURL[j:]
		}
		return rawURL
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
