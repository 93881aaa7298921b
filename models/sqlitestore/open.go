package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	// The database/sql driver "sqlite": modernc.org/sqlite's SQLite
	// compiled to Go (no cgo), through the driver layer of
	// github.com/glebarez/go-sqlite, a fork of modernc's. It is that one
	// and not modernc.org/sqlite's own because both register the name
	// "sqlite", so one binary can hold only one of them, and GORM's pure-Go
	// SQLite dialector (github.com/glebarez/sqlite) needs this one; the
	// tests prove models.Refresh works with it.
	_ "github.com/glebarez/go-sqlite"
)

// Memory is the path that opens a private in-memory database, for tests.
const Memory = ":memory:"

// BusyTimeout is how long a statement waits for SQLite's write lock (held
// by another transaction of this Store, or by the application writing the
// same file) before it fails with SQLITE_BUSY, which Classify calls
// Transient.
const BusyTimeout = 10 * time.Second

// DefaultMaxConnections is the pool size of a file database: readers run
// beside the one writer (WAL). An in-memory database has one connection.
const DefaultMaxConnections = 4

// Options say how OpenWith opens a database file.
type Options struct {
	// Create creates the file when it does not exist. Default false: a
	// missing file is an error that names it, so that a typo in the path
	// is not taken for a new, empty database (only `refresher migrate`
	// creates one).
	Create bool
	// NoInstanceLock opens the file without taking the instance lock, for
	// the one-shot admin commands (enable, trigger, pause, resume): they
	// write rows as the application does, beside a running service. The
	// lock is there to keep a second service out. Default false.
	NoInstanceLock bool
}

// Open opens (creating it if needed) the SQLite database file at path, or a
// private in-memory database for Memory, and returns its Store: OpenWith
// with Options{Create: true}.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{Create: true})
}

// OpenWith opens the SQLite database file at path, or a private in-memory
// database for Memory, and returns its Store.
//
// For a file it first takes an exclusive lock on path+".lock" (flock),
// held until Close or the process ends, and refuses to start when another
// refresher holds it: a SQLite database serves one service instance (use
// MySQL or PostgreSQL for several). The application, and the admin
// commands (o.NoInstanceLock), may still write the file: the lock file
// concerns the service only. It then sets, on every connection,
// journal_mode=WAL, synchronous=NORMAL (durable at each checkpoint; WAL's
// usual setting), busy_timeout (BusyTimeout), temp_store=MEMORY (the
// statement journals of bulk UPDATEs stay in memory) and BEGIN IMMEDIATE
// for every transaction.
//
// In-memory databases use a single connection (each connection would see
// its own empty database): do not call the Store from inside a Tx's fn.
func OpenWith(ctx context.Context, path string, o Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open SQLite database: empty path: give a file path, or :memory: for an in-memory database")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open SQLite database %q: the path contains '?': rename the file", path)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	// A bulk UPDATE inside a transaction keeps a statement journal (the
	// pages it changed, to undo it alone); on a temporary file, that is
	// write and read syscalls for every batch: 15% of a batch's CPU.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	var unlock func() error
	memory := path == Memory
	if !memory {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("open SQLite database %q: %w", path, err)
		}
		if dir := filepath.Dir(abs); dir != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return nil, fmt.Errorf("open SQLite database %s: directory %s does not exist: create it or fix the path", abs, dir)
			}
		}
		path = abs
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !o.Create {
			return nil, fmt.Errorf("open SQLite database %s: the file does not exist: fix the path (database: in the config, or REFRESHER_DATABASE), or run `refresher migrate` (without --print) to create it", path)
		}
		if !o.NoInstanceLock {
			if unlock, err = lockFile(path + ".lock"); err != nil {
				return nil, err
			}
		}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err == nil {
		if memory {
			db.SetMaxOpenConns(1)
			db.SetMaxIdleConns(1)
		} else {
			db.SetMaxOpenConns(DefaultMaxConnections)
			db.SetMaxIdleConns(DefaultMaxConnections)
		}
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = checkVersion(pctx, db)
		cancel()
		if err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		if unlock != nil {
			_ = unlock()
		}
		return nil, fmt.Errorf("open SQLite database %s: %w", path, err)
	}
	s := New(db)
	s.path, s.unlock = path, unlock
	return s, nil
}

// checkVersion pings db and refuses SQLite older than 3.38 (UPDATE FROM,
// the ->> operator).
func checkVersion(ctx context.Context, db *sql.DB) error {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
		return err
	}
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major < 3 || (major == 3 && minor < 38) {
		return fmt.Errorf("SQLite %s is too old: refresher needs 3.38 or later", v)
	}
	return nil
}
