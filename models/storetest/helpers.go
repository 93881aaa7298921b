package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// The helpers below are shared by the suite and the drivers' own tests:
// small assertions (testify would need a dependency go.sum does not list)
// and one-transaction shorthands over models.Store.

// Must fails the test on an unexpected error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// Eq fails the test unless got and want are deeply equal; what says what
// was compared.
func Eq(t testing.TB, got, want any, what ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s\n got: %#v\nwant: %#v", fmt.Sprint(what...), got, want)
	}
}

// ErrContains fails the test unless err is an error whose text contains
// every one of subs.
func ErrContains(t testing.TB, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not contain %q", err, s)
		}
	}
}

// Claim claims due rows of tbl in a transaction of its own; from is the
// cursor of the rows without a priority (models.PriorityKind).
func Claim(t testing.TB, s models.Store, tbl models.Table, now, from time.Time, limit int) []models.Row {
	t.Helper()
	return ClaimFrom(t, s, tbl, now, models.Cursor{Scan: models.Priority{Level: tbl.Priority}, At: from}, limit)
}

// ClaimFrom claims due rows of tbl from cursor from in a transaction of
// its own.
func ClaimFrom(t testing.TB, s models.Store, tbl models.Table, now time.Time, from models.Cursor, limit int) []models.Row {
	t.Helper()
	var rows []models.Row
	Must(t, s.Tx(context.Background(), func(tx models.Tx) (err error) {
		rows, err = tx.ClaimDue(context.Background(), tbl, now, from, limit)
		return err
	}))
	return rows
}

// Lock locks and reads the rows of tbl with keys in a transaction of its
// own.
func Lock(t testing.TB, s models.Store, tbl models.Table, keys ...string) map[string]models.Row {
	t.Helper()
	var got map[string]models.Row
	Must(t, s.Tx(context.Background(), func(tx models.Tx) (err error) {
		got, err = tx.LockByKeys(context.Background(), tbl, keys)
		return err
	}))
	return got
}

// KeysOf returns the keys of rows, in order (an empty slice, not nil, for
// none).
func KeysOf(rows []models.Row) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Key)
	}
	return out
}

// Base is a fixed instant with microseconds, for tests that control time.
var Base = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

// FullState is a state that sets every column, with microseconds, quotes,
// a backslash and non-ASCII text (an emoji among it); i varies the times,
// the attempt UID and the attempt number.
func FullState(i int) policy.State {
	at := Base.Add(time.Duration(i) * time.Minute)
	return policy.State{
		RefreshAt:      at,
		AttemptUID:     fmt.Sprintf("d1v5bqh6n88c7389%04d", i),
		AttemptAt:      at.Add(-time.Hour + time.Microsecond),
		AttemptNo:      i + 3,
		TimeoutAt:      at.Add(2 * time.Hour),
		DisabledAt:     at.Add(3 * time.Microsecond),
		DisabledReason: "Provided URL is invalid: https://example.com/ünï 💥",
		FailingSince:   at.Add(-48 * time.Hour),
		LastSuccessAt:  at.Add(-72*time.Hour + 999999*time.Microsecond),
		LastError:      "HTTP 500 'quoted' \\ back \"dq\"",
		Status:         "importing 5/10 ✓",
	}
}
