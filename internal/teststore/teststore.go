// Package teststore gives a service-level test a models.Store on a fresh
// database of the server it names, opened the way the service opens it
// (models/stores, from a URL), and the same database for the test's own
// statements. The service tests run on each store with Each, so that a
// behaviour that holds on MySQL is shown to hold on PostgreSQL (and, where
// cheap, SQLite) too.
//
// It is apart from internal/testenv, which the drivers' own tests import:
// this package imports the drivers.
package teststore

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the test's own statements

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/models/sqlitestore"
	"github.com/refresher/refresher/models/stores"
)

// The stores Open knows.
const (
	MySQL    = "mysql"    // MariaDB or MySQL: testenv.MySQLDSN's server
	Postgres = "postgres" // testenv.PostgresURL's server
	SQLite   = "sqlite"   // a file in the test's temporary directory
)

// Servers are the stores that run on a server, over TCP: those a test can
// cut with a testenv.Proxy, and that several instances may share.
var Servers = []string{MySQL, Postgres}

// DB is one test's database.
type DB struct {
	// Name is the store: MySQL, Postgres or SQLite.
	Name string
	// Store is the service's store on the database, closed when the test
	// ends.
	Store models.Store
	// SQL is the same database for the test's own statements; run them
	// with Exec, QueryRow or Query, which take "?" placeholders on every
	// store.
	SQL *sql.DB
	// URL opens the database with stores.Open (a go-sql-driver DSN for
	// MySQL, a postgres:// URL, a sqlite:// URL). A SQLite file serves one
	// Store at a time: open it only after closing Store.
	URL string
}

// Each runs f in a parallel subtest named after each store.
func Each(t *testing.T, names []string, f func(t *testing.T, store string)) {
	t.Helper()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, name)
		})
	}
}

// Open opens a fresh, empty database of the named store, dropped (or
// removed) when the test ends.
func Open(t testing.TB, name string) *DB {
	t.Helper()
	d := &DB{Name: name}
	switch name {
	case MySQL:
		d.URL = testenv.MySQLDSN(t)
	case Postgres:
		d.URL = testenv.PostgresURL(t)
	case SQLite:
		d.URL = "sqlite://" + filepath.Join(t.TempDir(), "app.db")
	default:
		t.Fatalf("teststore: unknown store %q: use %s, %s or %s", name, MySQL, Postgres, SQLite)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := stores.Open(ctx, d.URL, stores.Options{CreateSQLite: true})
	if err != nil {
		t.Fatalf("open the %s store: %v", name, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	d.Store = s
	switch st := s.(type) {
	case *mysqlstore.Store:
		d.SQL = st.DB()
	case *sqlitestore.Store:
		d.SQL = st.DB()
	default:
		// The store's pool is pgx's own; database/sql gets a second one.
		if d.SQL, err = sql.Open("pgx", d.URL); err != nil {
			t.Fatalf("open PostgreSQL for the test's statements: %v", err)
		}
		t.Cleanup(func() { _ = d.SQL.Close() })
	}
	return d
}

// Addr is the server's host:port; "" for SQLite.
func (d *DB) Addr(t testing.TB) string {
	t.Helper()
	switch d.Name {
	case MySQL:
		cfg, err := mysql.ParseDSN(d.URL)
		if err != nil {
			t.Fatalf("parse MySQL DSN: %v", err)
		}
		return cfg.Addr
	case Postgres:
		u, err := url.Parse(d.URL)
		if err != nil {
			t.Fatalf("parse PostgreSQL URL: %v", err)
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = "5432"
		}
		return net.JoinHostPort(host, port)
	}
	return ""
}

// URLVia returns URL with the server's address replaced by addr
// (host:port), e.g. a testenv.Proxy's.
func (d *DB) URLVia(t testing.TB, addr string) string {
	t.Helper()
	switch d.Name {
	case MySQL:
		cfg, err := mysql.ParseDSN(d.URL)
		if err != nil {
			t.Fatalf("parse MySQL DSN: %v", err)
		}
		cfg.Addr = addr
		return cfg.FormatDSN()
	case Postgres:
		u, err := url.Parse(d.URL)
		if err != nil {
			t.Fatalf("parse PostgreSQL URL: %v", err)
		}
		u.Host = addr
		return u.String()
	}
	t.Fatalf("teststore: %s has no server address", d.Name)
	return ""
}

// Rebind turns the "?" placeholders of query into the store's ($1, $2, ...
// on PostgreSQL). The test's statements hold no "?" in literals.
func (d *DB) Rebind(query string) string {
	if d.Name != Postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// args converts time arguments to what the store reads back as that
// instant: SQLite keeps times as text in sqlitestore.TimeFormat.
func (d *DB) args(args []any) []any {
	if d.Name != SQLite {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		if tm, ok := a.(time.Time); ok {
			a = tm.UTC().Truncate(time.Microsecond).Format(sqlitestore.TimeFormat)
		}
		out[i] = a
	}
	return out
}

// Exec runs one statement with "?" placeholders and fails the test on
// error.
func (d *DB) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := d.SQL.Exec(d.Rebind(query), d.args(args)...); err != nil {
		t.Fatalf("%s on %s: %v", query, d.Name, err)
	}
}

// QueryRow runs a query with "?" placeholders that returns one row.
func (d *DB) QueryRow(query string, args ...any) *sql.Row {
	return d.SQL.QueryRow(d.Rebind(query), d.args(args)...)
}

// Query runs a query with "?" placeholders.
func (d *DB) Query(query string, args ...any) (*sql.Rows, error) {
	return d.SQL.Query(d.Rebind(query), d.args(args)...)
}

// Now is an SQL expression for the current time in UTC, as the refresh
// columns hold it (for statements of an application that asks for a
// refresh "now").
func (d *DB) Now() string {
	switch d.Name {
	case Postgres:
		return "now()"
	case SQLite:
		return "strftime('%Y-%m-%d %H:%M:%f000+00:00', 'now')"
	}
	return "UTC_TIMESTAMP(6)"
}
