package pgstore

import (
	"context"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/storetest"
)

// harness runs the conformance suite on a fresh PostgreSQL database per test.
var harness = storetest.Harness{
	New: func(t *testing.T) storetest.Env {
		s := testStore(t)
		return storetest.Env{
			Store: s,
			Exec:  func(t *testing.T, sql string) { exec(t, s, sql) },
			CreateItemsTable: func(t *testing.T, name string, key storetest.KeyType) {
				typ := "varchar(64)"
				if key == storetest.KeyInt {
					typ = "bigint"
				}
				exec(t, s, "CREATE TABLE "+name+" (id bigserial PRIMARY KEY, k "+typ+" NULL UNIQUE, input_url varchar(255) NULL, size integer NULL)")
			},
		}
	},
}

func TestConformance(t *testing.T) { storetest.Run(t, harness) }

// testStore opens a Store on a fresh database through Open.
func testStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), testenv.PostgresURL(t), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func exec(t testing.TB, s *Store, sql string, args ...any) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// The assertions are the conformance suite's (see storetest).
var (
	must = storetest.Must
	eq   = storetest.Eq
	lock = storetest.Lock
)
