package mysqlstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/refresher/refresher/internal/testenv"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(t))
	must(t, err)
	// Whatever the DSN says, times are UTC.
	cfg.ParseTime = false
	cfg.Loc, err = time.LoadLocation("Europe/Berlin")
	must(t, err)
	cfg.Params = map[string]string{"time_zone": "'+02:00'"}
	db, err := Open(ctx, cfg.FormatDSN())
	must(t, err)
	defer db.Close()
	var tz string
	var now time.Time
	must(t, db.QueryRow("SELECT @@session.time_zone, TIMESTAMP('2026-01-02 03:04:05.000006')").Scan(&tz, &now))
	eq(t, tz, "+00:00")
	eq(t, now, time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	eq(t, now.Location(), time.UTC)
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := Open(ctx, "root:secret@tcp(127.0.0.1:1)/app?timeout=2s")
	errContains(t, err, "connect to MySQL at 127.0.0.1:1", `database "app"`, "REFRESHER_DATABASE")

	for _, dsn := range []string{"root:secret@tcp(127.0.0.1:3306)/", "root@tcp(127.0.0.1:3306)/?password=secret"} {
		_, err = Open(ctx, dsn)
		errContains(t, err, "names no database")
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Fatalf("error shows the password: %v", err)
		}
	}

	_, err = Open(ctx, "not a dsn")
	errContains(t, err, "parse database DSN")
}
