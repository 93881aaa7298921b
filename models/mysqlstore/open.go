package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/internal/redact"
)

// openHint ends connection errors: where the DSN comes from.
const openHint = `check "database:" in the config or REFRESHER_DATABASE, and that MySQL is running`

// Open opens the MySQL/MariaDB database named by dsn (a mysql:// URL, see
// DSN, or go-sql-driver format, "user:pass@tcp(host:3306)/app") the way refresher needs it, whatever the
// DSN says about these settings:
//
//   - parseTime=true and loc=UTC: DATETIME columns scan into UTC time.Time;
//   - time_zone='+00:00' on every connection, so the server reads and writes
//     UTC too (the columns hold UTC; README.md, "The columns");
//   - interpolateParams=true: arguments are escaped by the driver instead of
//     a server-side prepare per statement, one round trip instead of three;
//   - READ COMMITTED on every connection, set once when it opens (see
//     readCommitted), so Store.Tx begins without a SET TRANSACTION of its own.
//
// It pings the server and returns an error naming the host and database and
// where to fix the DSN when that fails. It refuses a server known to break
// the service's guarantees (TiDB, Vitess; see classifyEngine), saying why.
func Open(ctx context.Context, dsn string) (*sql.DB, error) {
	dsn, err := DSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, openHint)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("parse database DSN: %w (%s)", err, openHint), dsn)
	}
	if cfg.DBName == "" {
		return nil, fmt.Errorf("database DSN %q names no database: add it after the slash, e.g. root:@tcp(127.0.0.1:3306)/app", redact.String(cfg.FormatDSN()))
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("configure database %s: %w (%s)", redact.String(cfg.FormatDSN()), err, openHint), dsn)
	}
	db := sql.OpenDB(readCommitted{connector})
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, redact.Error(fmt.Errorf("connect to MySQL at %s (database %q): %w (%s)", cfg.Addr, cfg.DBName, err, openHint), dsn)
	}
	if err := checkEngine(pctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("MySQL at %s (database %q): %w", cfg.Addr, cfg.DBName, err)
	}
	return db, nil
}
