package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// TestPauseModelAndKind pauses and resumes a model and the kind through the
// API: who paused and the note show on the model, in state=paused and on
// the overview; refresh_at is cleared while paused and resuming plans the
// next occurrence (or a running attempt's timeout), never the missed runs.
func TestPauseModelAndKind(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	ctx := context.Background()
	refreshAt := func(uid string) time.Time {
		t.Helper()
		var at *time.Time
		if err := f.store.DB().QueryRow("SELECT refresh_at FROM items WHERE uid = ?", uid).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if at == nil {
			return time.Time{}
		}
		return at.UTC()
	}

	var e map[string]string
	if st := f.do("POST", "/api/v1/kinds/items/models/late-1/pause", "", PauseRequest{Note: "x"}, &e); st != 401 {
		t.Fatalf("pause without a token: %d %v", st, e)
	}
	var c ChangeResult
	note := "upstream migrates its API until 18:00 <b>not bold</b>"
	if st := f.do("POST", "/api/v1/kinds/items/models/late-1/pause", testToken, PauseRequest{Note: note}, &c); st != 200 ||
		c.After.State != "paused" || c.After.Pause == nil || c.After.Pause.By != "ops" || c.After.Pause.Note != note || c.After.RefreshAt != nil {
		t.Fatalf("pause: %d %+v", st, c)
	}
	if !refreshAt("late-1").IsZero() {
		t.Fatalf("paused late-1 still has refresh_at %v", refreshAt("late-1"))
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/running-1/pause", testToken, nil, &c); st != 200 ||
		!strings.Contains(c.Note, "attempt d1v5bqh6n88c73890001 still runs") {
		t.Fatalf("pause running: %d %+v", st, c)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/nope/pause", testToken, nil, &e); st != 404 {
		t.Fatalf("pause missing: %d %v", st, e)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/late-1/pause", testToken, PauseRequest{Note: strings.Repeat("n", 1001)}, &e); st != 400 {
		t.Fatalf("long note: %d %v", st, e)
	}
	paused, err := refresher.NewAdmin(nil, redisio.New(f.rdb)).PausedModels(ctx, f.kind.Lists)
	if err != nil || len(paused) != 2 {
		t.Fatalf("paused models in Redis (a missing key is not kept): %v %v", paused, err)
	}

	var page ModelPage
	if st := f.do("GET", "/api/v1/kinds/items/models?state=paused", "", nil, &page); st != 200 || len(page.Items) != 2 ||
		page.Items[0].UID != "late-1" || page.Items[0].Pause.Note != note || page.Items[1].UID != "running-1" || page.Items[1].State != "paused" {
		t.Fatalf("state=paused: %d %+v", st, page)
	}
	page = ModelPage{}
	f.do("GET", "/api/v1/kinds/items/models?state=paused&q=MIGRATES", "", nil, &page)
	if len(page.Items) != 1 || page.Items[0].UID != "late-1" {
		t.Fatalf("state=paused searched by note: %+v", page)
	}
	page = ModelPage{}
	f.do("GET", "/api/v1/kinds/items/models?state=paused&limit=1", "", nil, &page)
	if len(page.Items) != 1 || page.Next != "late-1" {
		t.Fatalf("state=paused page 1: %+v", page)
	}
	var d ModelDetail
	f.do("GET", "/api/v1/kinds/items/models/late-1", "", nil, &d)
	if d.Summary != "paused by ops at 14:00: "+note+"; not dispatched until resumed; refreshed at Mar 3 14:00; nothing is planned while paused; resuming plans the next occurrence (UTC)" {
		t.Fatalf("summary %q", d.Summary)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/late-1/trigger", testToken, nil, &e); st != 409 || !strings.Contains(e["error"], "resume it first") {
		t.Fatalf("trigger a paused model: %d %v", st, e)
	}

	// The kind: paused with a note, shown on the overview with the count.
	var kr KindPauseResult
	if st := f.do("POST", "/api/v1/kinds/items/pause", testToken, PauseRequest{Note: "incident 42"}, &kr); st != 200 || !kr.Paused {
		t.Fatalf("pause kind: %d %+v", st, kr)
	}
	var got struct{ Kinds []KindSummary }
	f.do("GET", "/api/v1/kinds", "", nil, &got)
	if k := got.Kinds[0]; k.Paused != 2 || k.Pause == nil || k.Pause.Note != "incident 42" || k.Pause.By != "ops" {
		t.Fatalf("overview: %+v", k)
	}
	if p, err := refresher.NewAdmin(nil, redisio.New(f.rdb)).KindPause(ctx, f.kind.Lists); err != nil || p == nil || p.Note != "incident 42" {
		t.Fatalf("kind pause in Redis: %+v %v", p, err)
	}
	if st := f.do("POST", "/api/v1/kinds/items/resume", testToken, nil, &kr); st != 200 || kr.Paused || !strings.HasPrefix(kr.Note, "resumed") {
		t.Fatalf("resume kind: %d %+v", st, kr)
	}
	got.Kinds = nil
	f.do("GET", "/api/v1/kinds", "", nil, &got)
	if k := got.Kinds[0]; k.Pause != nil {
		t.Fatalf("overview after resume: %+v", k)
	}

	// Resuming: the next occurrence (late-1 missed 14:00's... runs: one
	// run at the next 02:00), or the running attempt's timeout.
	if st := f.do("POST", "/api/v1/kinds/items/models/late-1/resume", testToken, nil, &c); st != 200 || c.After.State != "scheduled" ||
		c.Note != "resumed; next refresh at 2026-03-05T02:00:00Z" {
		t.Fatalf("resume: %d %+v", st, c)
	}
	if at := refreshAt("late-1"); !at.Equal(time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("late-1 refresh_at after resume: %v", at)
	}
	f.do("POST", "/api/v1/kinds/items/models/running-1/resume", testToken, nil, &c)
	if at := refreshAt("running-1"); !at.Equal(now.Add(50 * time.Minute)) {
		t.Fatalf("running-1 refresh_at after resume: %v, want its timeout", at)
	}
	if paused, _ := refresher.NewAdmin(nil, redisio.New(f.rdb)).PausedModels(ctx, f.kind.Lists); len(paused) != 0 {
		t.Fatalf("still paused after resume: %v", paused)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/resume", testToken, nil, &c); st != 200 || !strings.HasPrefix(c.Note, "was not paused") {
		t.Fatalf("resume a model not paused: %d %+v", st, c)
	}
}
