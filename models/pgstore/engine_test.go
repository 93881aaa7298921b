package pgstore

import (
	"context"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestClassifyEngine: the engines of PostgreSQL's protocol, from the
// version() strings they answer.
func TestClassifyEngine(t *testing.T) {
	t.Parallel()
	for version, want := range map[string]string{
		"PostgreSQL 16.4 (Debian 16.4-1.pgdg120+2) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit": "PostgreSQL",
		"CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu, built 2023/09/27 01:53:43, go1.19.10)":                                "CockroachDB",
		"PostgreSQL 11.2-YB-2.18.0.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 15.0.3, 64-bit":                     "YugabyteDB",
	} {
		if got := classifyEngine(version); got != want {
			t.Errorf("classifyEngine(%q) = %s, want %s", version, got, want)
		}
	}
}

// TestOpenLocalPostgres: the local PostgreSQL opens and is named as such.
func TestOpenLocalPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, testenv.PostgresURL(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name, err := s.Engine(ctx)
	if err != nil || name != "PostgreSQL" {
		t.Fatalf("Engine: %q, %v; want PostgreSQL", name, err)
	}
}
