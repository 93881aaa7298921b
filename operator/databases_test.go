package operator

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/pgstore"
	"github.com/refresher/refresher/redisio"
)

// TestKindsOnTwoDatabases: a kind with a Store of its own (pages, on
// PostgreSQL) beside the fixture's kind on MariaDB: the overview counts
// and the model reads and actions of each go to its own database, and
// /readyz checks each database, naming the one that does not answer.
func TestKindsOnTwoDatabases(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	pg, err := pgstore.Open(ctx, testenv.PostgresURL(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Pool().Exec(ctx, "CREATE TABLE pages (id bigserial PRIMARY KEY, uid varchar(20) NOT NULL UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Migrate(ctx, pg.Pool(), []string{"pages"}, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Pool().Exec(ctx, "INSERT INTO pages (uid, refresh_at) VALUES ('p1', $1), ('p2', NULL)", now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, prefix := testenv.Redis(t)
	pages := f.kind
	pages.Name, pages.Table, pages.ThrottleGroup = "pages", models.Table{Name: "pages", Key: "uid"}, ""
	pages.Lists, pages.Store = redisio.DefaultLists(prefix+"pages"), pg
	h := f.serve(func(o *Options) {
		o.Kinds = append(o.Kinds, pages)
		o.CheckTimeout = 500 * time.Millisecond
	})

	st, body, _ := get(t, h, "GET", "/api/v1/kinds", "", "")
	var overview struct {
		Kinds []KindSummary `json:"kinds"`
	}
	if err := json.Unmarshal([]byte(body), &overview); st != 200 || err != nil || len(overview.Kinds) != 2 {
		t.Fatalf("/api/v1/kinds: %d %v %s", st, err, body)
	}
	for _, k := range overview.Kinds {
		if k.Error != "" || (k.Name == "pages" && (k.Total != 2 || k.Late != 1)) || (k.Name == "items" && k.Total < 10) {
			t.Errorf("kind %s counted %+v", k.Name, k)
		}
	}
	if st, body, _ := get(t, h, "GET", "/api/v1/kinds/pages/models/p1", "", ""); st != 200 || !strings.Contains(body, `"uid": "p1"`) {
		t.Errorf("a model of pages: %d %s", st, body)
	}
	if st, body, _ := get(t, h, "GET", "/api/v1/kinds/pages/models/ok-1", "", ""); st != 404 {
		t.Errorf("a model of items asked of pages: %d %s", st, body)
	}
	if st, body, _ := get(t, h, "POST", "/api/v1/kinds/pages/models/p2/trigger", "Bearer "+testToken, ""); st != 200 || !strings.Contains(body, "refresh due now") {
		t.Errorf("trigger a model of pages: %d %s", st, body)
	}
	var at *time.Time
	if err := pg.Pool().QueryRow(ctx, "SELECT refresh_at FROM pages WHERE uid = 'p2'").Scan(&at); err != nil || at == nil {
		t.Errorf("the trigger did not reach PostgreSQL: %v, %v", at, err)
	}

	if st, body, _ := get(t, h, "GET", "/readyz", "", ""); st != 200 {
		t.Fatalf("/readyz with both databases up: %d %s", st, body)
	}
	pg.Close()
	st, body, _ = get(t, h, "GET", "/readyz", "", "")
	if st != 503 || !strings.Contains(body, "the database of kinds pages does not answer") ||
		strings.Contains(body, "items") || strings.Contains(body, "Redis") {
		t.Errorf("/readyz with pages' database closed: %d %q, want 503 naming that database only", st, body)
	}
}
