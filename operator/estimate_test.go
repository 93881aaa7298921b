package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// estimatingStore answers Counts as a driver does on a table too large to
// count exactly: the total is the database's estimate.
type estimatingStore struct{ models.Store }

func (s estimatingStore) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	c, err := s.Store.Counts(ctx, t, now, lateAfter)
	c.Total, c.TotalEstimated = 12_345_678, true
	c.Failing, c.Estimated = 234_567, []models.RowState{models.StateFailing}
	// An estimate no higher than the cap (stale statistics): clamped.
	c.Running, c.Estimated = models.ExactStateUpTo+1, append(c.Estimated, models.StateRunning)
	return c, err
}

// An estimated total is labelled as such in the API and on the overview;
// an exact one is not.
func TestEstimatedTotalLabelled(t *testing.T) {
	f := newFixture(t, nil)
	var got struct{ Kinds []map[string]any }
	if st := f.do("GET", "/api/v1/kinds", "", nil, &got); st != 200 {
		t.Fatalf("status %d", st)
	}
	if _, ok := got.Kinds[0]["total_estimated"]; ok {
		t.Fatalf("exact total labelled estimated: %v", got.Kinds[0])
	}
	if _, _, body := f.get("GET", "/"); strings.Contains(body, "≈") {
		t.Fatal("exact total shown as an estimate")
	}

	h := f.serve(func(o *Options) { o.Store = estimatingStore{f.store}; o.Tokens = nil; o.ReadTokens = nil })
	st, body, _ := get(t, h, "GET", "/api/v1/kinds", "", "")
	if st != 200 || !strings.Contains(body, `"total": 12345678,`) || !strings.Contains(body, `"total_estimated": true`) {
		t.Fatalf("API: %d %s", st, body)
	}
	st, body, _ = get(t, h, "GET", "/", "", "")
	if st != 200 || !strings.Contains(body, "≈12345678</abbr>") {
		t.Fatalf("overview: %d %s", st, body)
	}
}

// A state's estimated count is labelled in the API ("estimated": its
// name) and on the overview ("≈"); the exact states are not.
func TestEstimatedStateLabelled(t *testing.T) {
	f := newFixture(t, nil)
	var got struct{ Kinds []map[string]any }
	if st := f.do("GET", "/api/v1/kinds", "", nil, &got); st != 200 {
		t.Fatalf("status %d", st)
	}
	if _, ok := got.Kinds[0]["estimated"]; ok {
		t.Fatalf("exact states labelled estimated: %v", got.Kinds[0])
	}

	h := f.serve(func(o *Options) { o.Store = estimatingStore{f.store}; o.Tokens = nil; o.ReadTokens = nil })
	st, body, _ := get(t, h, "GET", "/api/v1/kinds", "", "")
	var api struct{ Kinds []KindSummary }
	if err := json.Unmarshal([]byte(body), &api); st != 200 || err != nil || len(api.Kinds) != 1 {
		t.Fatalf("API: %d %v %s", st, err, body)
	}
	if k := api.Kinds[0]; k.Failing != 234_567 || !slices.Equal(k.Estimated, []models.RowState{models.StateFailing, models.StateRunning}) {
		t.Fatalf("API: failing %d, estimated %v; want 234567 and [failing running]: %s", k.Failing, k.Estimated, body)
	}
	st, body, _ = get(t, h, "GET", "/", "", "")
	if st != 200 || !strings.Contains(body, "≈234567</abbr>") || strings.Count(body, "≈") != 2 {
		t.Fatalf("overview: want the total and failing only marked ≈: %d %s", st, body)
	}
	// An estimate at the cap+1 says only "more than the cap".
	if more := fmt.Sprintf("&gt;%d</abbr>", models.ExactStateUpTo); !strings.Contains(body, more) || strings.Count(body, "&gt;") != 1 {
		t.Fatalf("overview: want running shown as %q: %s", more, body)
	}
}
