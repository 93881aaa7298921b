package pgstore

import (
	"context"
	"errors"
	"io"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]models.ErrorClass{
		"08006": models.Transient, "40001": models.Transient, "40P01": models.Transient,
		"57P01": models.Transient, "57P03": models.Transient, "53300": models.Transient,
		"55P03": models.Transient, "57014": models.Transient,
		"22001": models.ValueRefused, "22P05": models.ValueRefused, "22021": models.ValueRefused,
		"23502": models.ValueRefused, "23514": models.ValueRefused, "P0001": models.ValueRefused,
		"42P01": models.TableRefused, "42703": models.TableRefused, "42501": models.TableRefused,
		"25006": models.TableRefused, "XX000": models.TableRefused, "23505": models.TableRefused,
	} {
		err := error(&pgconn.PgError{Code: code, Message: "m"})
		eq(t, classify(err), want, code)
		eq(t, classify(errors.Join(errors.New("save rows"), err)), want, code, " wrapped")
	}
	eq(t, classify(errors.New("connection refused")), models.Transient, "not a PgError")
	eq(t, classify(&pgconn.PgError{Code: "0A000", Message: "cached plan must not change result type"}), models.Transient, "cached plan")
	eq(t, classify(tableErrorf("no table")), models.TableRefused, "the store's own finding")
	hinted := withSchemaHint(&pgconn.PgError{Code: "42P01", Message: `relation "items" does not exist`})
	if !strings.Contains(hinted.Error(), "refresher migrate") {
		t.Fatalf("no hint: %v", hinted)
	}
	eq(t, classify(hinted), models.TableRefused, "hinted")
}

func TestOpenHidesThePassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, raw := range []string{
		"postgres://refresher:s3cret-pw@127.0.0.1:1/app?sslmode=disable&connect_timeout=2",
		"postgresql://refresher:s3cret-pw@127.0.0.1:1/app?sslmode=bogus",
		"postgres://refresher:s3cret-pw@127.0.0.1:1/?sslmode=disable",
		"postgres://refresher:s3cret-pw@[bad/app",
		// A password in the query, as pgx reads it too.
		"postgres://refresher@127.0.0.1:1/?password=s3cret-pw&sslmode=disable",
		"postgres://refresher@127.0.0.1:1/app?sslpassword=s3cret-pw&sslmode=bogus",
	} {
		_, err := Open(ctx, raw, 2)
		if err == nil {
			t.Fatalf("Open(%q): no error", raw)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("error shows the password: %v", err)
		}
	}
}

// Open takes its pool size from its caller (stores.Open), which owns the
// default: none is made up here.
func TestOpenNeedsMaxConns(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "postgres://refresher@127.0.0.1:1/app", 0)
	if err == nil || !strings.Contains(err.Error(), "maxConns must be at least 1, not 0") {
		t.Fatalf("Open with maxConns 0: %v, want a refusal", err)
	}
}

// TestTimestampWithoutTimeZone: a table whose application made the time
// columns timestamp(6) without time zone works the same, and Migrate
// accepts them without a warning; another type gets one.
func TestTimestampWithoutTimeZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, "SET TIME ZONE 'Europe/Paris'") // a pooled session's zone must not matter
	exec(t, s, `CREATE TABLE items (k text PRIMARY KEY, refresh_at timestamp(6), refresh_attempt_at timestamp(6),
		refresh_timeout_at timestamp(6), refresh_disabled_until_update timestamp(6), refresh_failing_since timestamp(6),
		refresh_last_success_at timestamp(6), refresh_status text)`)
	var out strings.Builder
	r, err := s.Migrate(ctx, []string{"items"}, &out, false)
	must(t, err)
	eq(t, r.Tables[0].Warnings, []string{"column refresh_status exists as text, migration 0001_refresh_columns declares character varying(255); left unchanged"}, out.String())
	exec(t, s, "INSERT INTO items (k, refresh_at) VALUES ('a', '2026-03-04 05:06:07.123456')")
	tbl := models.Table{Name: "items", Key: "k"}
	var rows []models.Row
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		if rows, err = tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10); err != nil {
			return err
		}
		if len(rows) == 1 {
			rows[0].State = policy.State{RefreshAt: base.Add(time.Hour), AttemptAt: base, LastSuccessAt: base.Add(-time.Microsecond)}
		}
		return tx.Save(ctx, tbl, rows)
	}))
	eq(t, len(rows), 1, "due at exactly now, in UTC")
	var text string
	must(t, s.Pool().QueryRow(ctx, "SELECT refresh_at::text || ' ' || refresh_last_success_at::text FROM items").Scan(&text))
	eq(t, text, "2026-03-04 06:06:07.123456 2026-03-04 05:06:07.123455", "stored as UTC wall clock")
	next, _, err := s.NextDue(ctx, tbl)
	must(t, err)
	eq(t, next, base.Add(time.Hour))
}

// TestInfiniteTimeRefused: a state column holding infinity fails the
// read with an error naming it, as scanning it into a *time.Time did,
// rather than reading as a zero (NULL) time: the claim and the read of
// rows by key scan the times into nullTime, which must refuse it too.
func TestInfiniteTimeRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, `CREATE TABLE items (k bigint PRIMARY KEY)`)
	_, err := s.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	exec(t, s, `INSERT INTO items (k, refresh_at, refresh_attempt_uid, refresh_timeout_at) VALUES (1, $1, 'u', 'infinity')`, base)
	exec(t, s, `INSERT INTO items (k, refresh_at, refresh_last_success_at) VALUES (2, $1, '-infinity')`, base)
	tbl := models.Table{Name: "items", Key: "k"}
	for _, k := range []string{"1", "2"} {
		err := s.Tx(ctx, func(tx models.Tx) error {
			_, err := tx.LockByKeys(ctx, tbl, []string{k})
			return err
		})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "infinity") {
			t.Errorf("row %s: read with an infinite time: %v, want an error", k, err)
		}
	}
	err = s.Tx(ctx, func(tx models.Tx) error {
		_, err := tx.ClaimDue(ctx, tbl, base.Add(time.Hour), models.Cursor{}, 10)
		return err
	})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "infinity") {
		t.Errorf("claim of a running row with an infinite timeout: %v, want an error", err)
	}
}

// TestMigrateConcurrently: runs that overlap wait for each other; one
// applies, the other finds the table up to date.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, "CREATE TABLE items (id bigserial PRIMARY KEY, k text UNIQUE)")
	var wg sync.WaitGroup
	reports := make([]models.MigrateReport, 3)
	errs := make([]error, 3)
	for i := range reports {
		wg.Go(func() { reports[i], errs[i] = s.Migrate(ctx, []string{"items"}, io.Discard, false) })
	}
	wg.Wait()
	applied := 0
	for i, err := range errs {
		must(t, err)
		applied += len(reports[i].Tables[0].Applied)
	}
	eq(t, applied, 5, "each migration applied once")
	var n int
	must(t, s.Pool().QueryRow(ctx, "SELECT count(*) FROM refresher_schema_migrations WHERE table_name = 'items'").Scan(&n))
	eq(t, n, 5, "recorded once")
}

func TestMigrateDryRunWithoutDatabase(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	r, err := Migrate(context.Background(), nil, []string{"a", "b"}, &out, true)
	must(t, err)
	eq(t, len(r.Tables), 2)
	for _, want := range []string{`ALTER TABLE "a"`, `CREATE INDEX IF NOT EXISTS "b_refresh_at_idx" ON "b" ("refresh_at")`, `ADD COLUMN IF NOT EXISTS "refresh_attempt_no" integer NOT NULL DEFAULT 0`} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := Migrate(context.Background(), nil, []string{"a"}, &out, false); err == nil {
		t.Fatal("Migrate without a database and not dry: no error")
	}
}

// TestPayloadTypes: payload values come out JSON-friendly, like
// mysqlstore's.
func TestPayloadTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, `CREATE TABLE items (k uuid PRIMARY KEY, i smallint, n numeric(10,2), f real, d date, ts timestamptz,
		b bytea, j jsonb, ok boolean, t varchar(10))`)
	_, err := s.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	exec(t, s, `INSERT INTO items VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 7, -12.50, 1.5, '2026-03-04',
		'2026-03-04 05:06:07.5+02', 'raw', '{"x": [1, "y"]}', true, 'héllo')`)
	exec(t, s, "UPDATE items SET refresh_at = $1", base)
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"i", "n", "f", "d", "ts", "b", "j", "ok", "t"}}
	var rows []models.Row
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		rows, err = tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 1)
		return err
	}))
	eq(t, len(rows), 1)
	eq(t, rows[0].Key, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
	eq(t, rows[0].Payload.Map(), map[string]any{
		"i": int64(7), "n": "-12.50", "f": float64(1.5), "d": "2026-03-04T00:00:00Z", "ts": "2026-03-04T03:06:07.5Z",
		"b": "raw", "j": map[string]any{"x": []any{float64(1), "y"}}, "ok": true, "t": "héllo",
	})
	// uuid keys: any accepted spelling finds the row; others find nothing.
	got := lock(t, s, tbl, "{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A11}", "a0eebc999c0b4ef8bb6d6bb9bd380a11", "nope", "a0ee-bc99")
	eq(t, len(got), 1, "uuid spellings")
}

func TestKeyTypeValid(t *testing.T) {
	t.Parallel()
	i4 := colMeta{typ: `"pg_catalog"."int4"`, name: "int4"}.keyType()
	for k, want := range map[string]bool{"7": true, " 7 ": true, "+7": true, "-2147483648": true, "2147483648": false, "abc": false, "": false, "7.0": false} {
		eq(t, i4.valid(k), want, "int4 ", k)
	}
	txt := colMeta{typ: `"pg_catalog"."text"`, name: "text"}.keyType()
	eq(t, txt.valid("💥"), true)
	eq(t, txt.valid("a\x00b"), false, "NUL")
	eq(t, txt.valid("\xff"), false, "invalid UTF-8")
	eq(t, cutText(&models.Column{Kind: models.TextColumn, MaxLen: 6}, "a\x00b\xff"+strings.Repeat("é", 10)), "a\uFFFDb\uFFFDé…")
	eq(t, numericString(nil, 0), "0")
	for _, c := range []struct {
		digits string
		exp    int32
		want   string
	}{{"1250", -2, "12.50"}, {"-5", -3, "-0.005"}, {"12", 2, "1200"}} {
		n, _ := new(bigInt).SetString(c.digits, 10)
		eq(t, numericString(n, c.exp), c.want, c.digits)
	}
}

type bigInt = big.Int

// TestTriggerRefusesOneKey: an application trigger that raises for one row
// refuses a value (P0001); the other rows save in another batch.
func TestTriggerRefusesOneKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, "CREATE TABLE items (id bigserial PRIMARY KEY, k text UNIQUE)")
	_, err := s.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	exec(t, s, "INSERT INTO items (k) VALUES ('good'), ('bad')")
	exec(t, s, `CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.k = 'bad' THEN RAISE EXCEPTION 'row % is frozen', NEW.k; END IF; RETURN NEW; END $$`)
	exec(t, s, "CREATE TRIGGER refuse_bad BEFORE UPDATE ON items FOR EACH ROW EXECUTE FUNCTION refuse_bad()")
	tbl := models.Table{Name: "items", Key: "k"}
	save := func(keys ...string) error {
		return s.Tx(ctx, func(tx models.Tx) error {
			var rows []models.Row
			for _, k := range keys {
				rows = append(rows, models.Row{Key: k, State: policy.State{Status: "s"}})
			}
			return tx.Save(ctx, tbl, rows)
		})
	}
	err = save("good", "bad")
	if err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Fatalf("save through the trigger: %v", err)
	}
	eq(t, s.Classify(err), models.ValueRefused, err)
	must(t, save("good"))
	eq(t, lock(t, s, tbl, "good")["good"].State.Status, "s")
}

// A table's statements are compiled once, not for each statement of each
// batch.
func TestCompileCached(t *testing.T) {
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, "CREATE TABLE items (id bigserial PRIMARY KEY, k varchar(20) NOT NULL UNIQUE)")
	_, err := s.Migrate(ctx, []string{"items"}, nil, false)
	must(t, err)
	tbl := models.Table{Name: "items", Key: "k"}
	_, err = s.compile(ctx, tbl)
	must(t, err)
	if n := testing.AllocsPerRun(10, func() { _, _ = s.compile(ctx, tbl) }); n > 2 {
		t.Errorf("compile allocates %v times once the table is known, want at most 2", n)
	}
}
