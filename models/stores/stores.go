// Package stores opens the models.Store named by a database URL, with the
// driver its scheme names. It is the one place that knows every driver, so
// that the service and its commands know none.
package stores

import (
	"context"
	"fmt"
	"strings"

	"github.com/refresher/refresher/internal/redact"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/models/pgstore"
	"github.com/refresher/refresher/models/sqlitestore"
)

// Options tune the connections of a Store.
type Options struct {
	// MaxConnections caps the database connections the Store opens, shared
	// by the loops of the kinds on this database (each database a kind
	// names gets a Store of its own); they wait for a free one in turn.
	// Default 16.
	MaxConnections int
	// CreateSQLite creates a SQLite database file that does not exist.
	// Default false: a missing file is an error, so that a typo in the path
	// does not start a service on a new, empty database; `refresher
	// migrate` sets it.
	CreateSQLite bool
	// AdminSQLite opens a SQLite database for a one-shot admin command
	// (enable, trigger, pause, resume): without the instance lock, which
	// keeps out a second service, so that the command can write beside the
	// running one as the application does. Default false.
	AdminSQLite bool
}

// DefaultMaxConnections is Options.MaxConnections' default.
const DefaultMaxConnections = 16

// Schemes lists the URL schemes Open knows, for error messages.
const Schemes = "mysql://user:pass@host:3306/app, postgres://user:pass@host:5432/app, sqlite:///path/app.db (or sqlite://relative.db, sqlite::memory:)"

// Open opens and pings the database named by raw: a URL whose scheme names
// the driver (see Schemes), or a go-sql-driver DSN without a scheme
// ("user:pass@tcp(host:3306)/app"), which is MySQL. Errors never show a
// password: neither the one of the user information nor one in the query
// (?password=...); see package redact.
func Open(ctx context.Context, raw string, o Options) (models.Store, error) {
	s, err := open(ctx, raw, o)
	return s, redact.Error(err, raw)
}

func open(ctx context.Context, raw string, o Options) (models.Store, error) {
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if rest, ok := strings.CutPrefix(raw, "sqlite:"); ok {
		// sqlite:///abs/app.db, sqlite://app.db (relative to the working
		// directory), sqlite::memory: (a private in-memory database, for
		// tests). One instance per file; MaxConnections does not apply.
		path := strings.TrimPrefix(rest, "//")
		if path == "" {
			return nil, fmt.Errorf("database URL %q names no file: use sqlite:///abs/path/app.db, sqlite://relative.db or sqlite::memory:", raw)
		}
		return sqlitestore.OpenWith(ctx, path, sqlitestore.Options{Create: o.CreateSQLite, NoInstanceLock: o.AdminSQLite})
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme || strings.ContainsAny(scheme, "@/(") {
		scheme = "mysql" // a go-sql-driver DSN: user:pass@tcp(host)/db
	}
	switch scheme {
	case "mysql":
		db, err := mysqlstore.Open(ctx, raw)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(o.MaxConnections)
		db.SetMaxIdleConns(o.MaxConnections)
		return mysqlstore.New(db), nil
	case "postgres", "postgresql":
		return pgstore.Open(ctx, raw, o.MaxConnections)
	}
	return nil, fmt.Errorf("database URL: unknown scheme %q: use one of %s (or a go-sql-driver DSN for MySQL)", scheme, Schemes)
}
