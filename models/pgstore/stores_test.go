package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/pgstore"
	"github.com/refresher/refresher/models/stores"
)

// TestStoresOpen: stores.Open opens postgres:// and postgresql:// URLs with
// this driver, the pool sized by MaxConnections and the session in UTC.
func TestStoresOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	for _, raw := range []string{url, "postgresql" + strings.TrimPrefix(url, "postgres")} {
		s, err := stores.Open(ctx, raw, stores.Options{MaxConnections: 3})
		if err != nil {
			t.Fatal(err)
		}
		ps := s.(*pgstore.Store)
		if got := ps.Pool().Config().MaxConns; got != 3 {
			t.Fatalf("pool size %d, want 3", got)
		}
		var tz string
		if err := ps.Pool().QueryRow(ctx, "SHOW TimeZone").Scan(&tz); err != nil || tz != "UTC" {
			t.Fatalf("session time zone %q (%v), want UTC", tz, err)
		}
		_ = s.Close()
	}
	_, err := stores.Open(ctx, "postgresql://refresher:s3cret-pw@127.0.0.1:1/app?sslmode=disable&connect_timeout=2", stores.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("stores.Open of an unreachable server: %v", err)
	}
}
