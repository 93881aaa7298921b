package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/mysqlstore"
)

// TestFrozenDatabase: with the database frozen (connections open, no
// answer), /readyz names the database and not Redis, within its own
// deadline, and every read answers within PageTimeout with an error that
// says so instead of hanging.
func TestFrozenDatabase(t *testing.T) {
	f := newFixture(t, nil)
	cfg, err := mysql.ParseDSN(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, cfg.Addr)
	cfg.Addr = proxy.Addr
	db, err := mysqlstore.Open(context.Background(), cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := f.serve(func(o *Options) {
		o.Store = mysqlstore.New(db)
		o.CheckTimeout, o.PageTimeout = 500*time.Millisecond, time.Second
	})
	if st, body, _ := get(t, h, "GET", "/readyz", "", ""); st != 200 {
		t.Fatalf("before the freeze: %d %s", st, body)
	}

	proxy.Freeze()
	start := time.Now()
	st, body, _ := get(t, h, "GET", "/readyz", "", "")
	took := time.Since(start)
	t.Logf("/readyz during a database freeze: %d in %v: %q", st, took.Round(time.Millisecond), body)
	if st != 503 || !strings.Contains(body, "the database does not answer") || strings.Contains(body, "Redis") {
		t.Errorf("/readyz during a database freeze: %d %q, want 503 naming the database only", st, body)
	}
	if took > 2*time.Second {
		t.Errorf("/readyz took %v", took)
	}
	for _, tc := range []struct{ path, ctype, want string }{
		{"/kinds/items", "text/html", "No answer in time"},
		{"/kinds/items/models/ok-1", "text/html", "No answer in time"},
		{"/api/v1/kinds/items/models", "application/json", `"error": "no answer within 1s`},
		{"/api/v1/kinds/items/models/ok-1", "application/json", `"error": "no answer within 1s`},
	} {
		start := time.Now()
		st, body, hdr := get(t, h, "GET", tc.path, "", "")
		took := time.Since(start)
		if st != 503 || !strings.Contains(body, tc.want) || !strings.HasPrefix(hdr.Get("Content-Type"), tc.ctype) || took > 3*time.Second {
			t.Errorf("GET %s during a database freeze: %d in %v, %s, %q", tc.path, st, took, hdr.Get("Content-Type"), body)
		}
	}

	proxy.Restore()
	testenv.EventuallyNil(t, 10*time.Second, "an answer after the freeze", func() error {
		if st, body, _ := get(t, h, "GET", "/api/v1/kinds/items/models/ok-1", "", ""); st != 200 {
			return fmt.Errorf("%d %s", st, body)
		}
		return nil
	})
}
