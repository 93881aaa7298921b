package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/policy"
)

// TestProbeReadRowsInPlace: readRows fills each row in place from its own
// scan (NULLs after values clear the fields, nothing of the row before
// stays), and a row that fails to scan (an infinite timestamp, refused
// as a time) fails the read: no rows, none half-filled, are returned.
func TestProbeReadRowsInPlace(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PostgresURL(t))
	must(t, err)
	defer conn.Close(ctx)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC)
	const cols = `SELECT k, rule, at, uid, at, n, at, at, reason, at, at, err, st FROM (VALUES
		('1', 'FREQ=DAILY', $1::timestamptz, 'u1                  ', 3::int8, 'r', 'e', 's'),
		('2', NULL, NULL, NULL, 0::int8, NULL, NULL, NULL)`
	rs, err := conn.Query(ctx, cols+`) v(k, rule, at, uid, n, reason, err, st) ORDER BY k`, t0)
	must(t, err)
	rows, err := readRows(rs, compiled{}, 2, false)
	rs.Close()
	must(t, err)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	want0 := policy.State{RefreshAt: t0, AttemptUID: "u1", AttemptAt: t0, AttemptNo: 3, TimeoutAt: t0, DisabledAt: t0,
		DisabledReason: "r", FailingSince: t0, LastSuccessAt: t0, LastError: "e", Status: "s"}
	if rows[0].State != want0 || rows[0].Loaded.State != want0 || rows[0].Rule != "FREQ=DAILY" || rows[0].Key != "1" {
		t.Errorf("row 0: %+v", rows[0])
	}
	if rows[1].State != (policy.State{}) || rows[1].Loaded.State != (policy.State{}) || rows[1].Rule != "" || rows[1].Key != "2" || !rows[1].Loaded.OK {
		t.Errorf("row 1 (NULLs after values): %+v", rows[1])
	}
	rs, err = conn.Query(ctx, cols+`, ('3', NULL, 'infinity'::timestamptz, NULL, 0::int8, NULL, NULL, NULL)) v(k, rule, at, uid, n, reason, err, st) ORDER BY k`, t0)
	must(t, err)
	rows, err = readRows(rs, compiled{}, 3, false)
	rs.Close()
	if err == nil || rows != nil {
		t.Errorf("a row that fails to scan: %d rows, %v", len(rows), err)
	}
}
