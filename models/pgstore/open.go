package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refresher/refresher/internal/redact"
)

// openHint ends connection errors: where the URL comes from.
const openHint = `check "database:" in the config or REFRESHER_DATABASE, and that PostgreSQL is running`

// Open opens a pool on the PostgreSQL database named by rawURL
// ("postgres://user:pass@host:5432/app?sslmode=disable"; "postgresql://"
// works too, and so do the libpq parameters pgx understands), with at most
// maxConns connections (at least 1; stores.Open passes its
// Options.MaxConnections, which holds the default), and pings it. Every
// connection's TimeZone is UTC, whatever the URL says, and its
// application_name "refresher" unless the URL names one, and its array
// parameters encode into a buffer grown once (presizeArrays). Errors never
// show the password.
func Open(ctx context.Context, rawURL string, maxConns int) (*Store, error) {
	if maxConns < 1 {
		return nil, fmt.Errorf("pgstore: maxConns must be at least 1, not %d (stores.Open passes a default)", maxConns)
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL %s: %s (%s)", redact.String(rawURL), redact.Error(err, rawURL), openHint)
	}
	if cfg.ConnConfig.Database == "" {
		return nil, fmt.Errorf("database URL %s names no database: add it after the slash, e.g. postgres://user@127.0.0.1:5432/app", redact.String(rawURL))
	}
	cfg.MaxConns = int32(maxConns)
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "refresher"
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		presizeArrays(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("configure database %s: %s (%s)", redact.String(rawURL), redact.Error(err, rawURL), openHint)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL at %s (database %q): %s (%s)", cfg.ConnConfig.Host, cfg.ConnConfig.Database, redact.Error(err, rawURL), openHint)
	}
	return New(pool), nil
}
