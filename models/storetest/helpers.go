package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
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

// Claim claims due rows of tbl in a transaction of its own.
func Claim(t testing.TB, s models.Store, tbl models.Table, now, from time.Time, limit int) []models.Row {
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
