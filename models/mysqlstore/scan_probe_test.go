package mysqlstore

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
)

// TestProbeStateScanDestsOnServer: on the server, over the text protocol
// (a query without arguments) and the binary one (with), the claim's own
// scan destinations read what sql.NullTime, sql.NullString and *int read
// from DATETIME with and without fractions, TIMESTAMP, zero dates, NULLs,
// text in binary and case-insensitive collations of varying lengths (the
// driver's buffer reused by the next row: the values are compared only
// after all rows are read), negative numbers and BIGINT UNSIGNED values,
// and refuse what they refuse (an unsigned value beyond int64, NULL into
// an int).
func TestProbeStateScanDestsOnServer(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	conn, err := db.Conn(ctx)
	must(t, err)
	defer conn.Close()
	run := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	run("SET SESSION sql_mode = ''") // zero dates allowed
	run(`CREATE TABLE probe (n INT PRIMARY KEY,
		dt6 DATETIME(6) NULL, dt0 DATETIME NULL, ts TIMESTAMP(6) NULL DEFAULT NULL,
		tb VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, tc TEXT NULL, tv VARBINARY(300) NULL,
		i INT NOT NULL, b BIGINT NOT NULL, u BIGINT UNSIGNED NOT NULL)`)
	run(`INSERT INTO probe VALUES
		(1, '2026-11-26 12:00:00.123456', '2026-11-26 12:00:01', '2026-11-26 12:00:02.5', REPEAT('a', 250), 'ünï', 'x\0y', -7, -9223372036854775808, 9223372036854775807),
		(2, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0),
		(3, '0000-00-00 00:00:00', '0000-00-00', '0000-00-00 00:00:00', 'b', '', '', 2147483647, 9223372036854775807, 42),
		(4, '1970-01-01 00:00:00.000001', '9999-12-31 23:59:59', '2038-01-19 03:14:07.999999', 'c', REPEAT('z', 200), 'q', -2147483648, -1, 1)`)
	type got struct {
		times [3]sql.NullTime
		texts [3]sql.NullString
		ints  [3]int
	}
	read := func(ours bool, args ...any) []got {
		t.Helper()
		q := "SELECT dt6, dt0, ts, tb, tc, tv, i, b, u FROM probe"
		if len(args) > 0 {
			q += " WHERE n > ?"
		}
		rs, err := conn.QueryContext(ctx, q+" ORDER BY n", args...)
		must(t, err)
		defer rs.Close()
		var out []got
		var (
			td [3]timeDest
			sd [3]textDest
			id [3]intDest
			nt [3]sql.NullTime
			ns [3]sql.NullString
			ni [3]int
		)
		for rs.Next() {
			var g got
			if ours {
				must(t, rs.Scan(&td[0], &td[1], &td[2], &sd[0], &sd[1], &sd[2], &id[0], &id[1], &id[2]))
				for k := range 3 {
					g.times[k], g.texts[k], g.ints[k] = td[k].NullTime, sd[k].NullString, int(id[k])
				}
			} else {
				must(t, rs.Scan(&nt[0], &nt[1], &nt[2], &ns[0], &ns[1], &ns[2], &ni[0], &ni[1], &ni[2]))
				g = got{nt, ns, ni}
			}
			out = append(out, g)
		}
		must(t, rs.Err())
		return out
	}
	for _, args := range [][]any{nil, {0}} {
		want, gotRows := read(false, args...), read(true, args...)
		if len(want) != 4 || !reflect.DeepEqual(gotRows, want) {
			t.Errorf("args %v:\n got %+v\nwant %+v", args, gotRows, want)
		}
	}
	// What *int refuses, intDest refuses.
	for _, q := range []string{"SELECT CAST(18446744073709551615 AS UNSIGNED)", "SELECT NULL", "SELECT 'x'", "SELECT 1.5"} {
		for _, args := range [][]any{nil, {1}} {
			qq := q
			if args != nil {
				qq += " FROM DUAL WHERE 1 = ?"
			}
			var n int
			var d intDest
			werr := conn.QueryRowContext(ctx, qq, args...).Scan(&n)
			gerr := conn.QueryRowContext(ctx, qq, args...).Scan(&d)
			if (werr == nil) != (gerr == nil) || (werr == nil && int(d) != n) {
				t.Errorf("%s %v: intDest %d, %v; *int %d, %v", qq, args, d, gerr, n, werr)
			}
		}
	}
}
