package operator

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

func TestKindsCounts(t *testing.T) {
	f := newFixture(t, nil)
	var got struct{ Kinds []KindSummary }
	if st := f.do("GET", "/api/v1/kinds", "", nil, &got); st != 200 {
		t.Fatalf("status %d", st)
	}
	k := got.Kinds[0]
	k.OldestDue = nil
	want := KindSummary{Name: "items", Priority: "interactive", Table: "items", Total: 10, Due: 3, Late: 2, Running: 1,
		Failing: 1, Disabled: 4, OldestDueAgeSeconds: 600, MaxAttemptNo: 3, LateAfterSeconds: 60,
		Lists: ListLens{Input: 2, Output: 0, Dead: 3}, Backlog: []models.LevelCount{{Level: 0, Due: 3}}}
	if !reflect.DeepEqual(k, want) {
		t.Fatalf("kinds:\n got %+v\nwant %+v", k, want)
	}
}

func TestModelsListAndDetail(t *testing.T) {
	f := newFixture(t, nil)
	var page ModelPage
	if st := f.do("GET", "/api/v1/kinds/items/models?state=disabled&limit=2", "", nil, &page); st != 200 {
		t.Fatalf("status %d", st)
	}
	if len(page.Items) != 2 || page.Items[0].UID != "a-very-long-model-uid-"+strings.Repeat("x", 150) || page.Next != "off-1" {
		t.Fatalf("page 1: %+v", page)
	}
	page = ModelPage{}
	f.do("GET", "/api/v1/kinds/items/models?state=disabled&limit=2&after="+page.Next+"off-1", "", nil, &page)
	if len(page.Items) != 2 || page.Items[0].UID != "off-2" || page.Items[0].DisabledReason != "Cannot refresh items after 3 attempt(s)" {
		t.Fatalf("page 2: %+v", page)
	}
	page = ModelPage{}
	f.do("GET", "/api/v1/kinds/items/models?state=all&q=upstream", "", nil, &page)
	if len(page.Items) != 1 || page.Items[0].UID != "failing-1" || page.Items[0].State != "failing" {
		t.Fatalf("search: %+v", page)
	}
	var e map[string]string
	if st := f.do("GET", "/api/v1/kinds/items/models?state=bogus", "", nil, &e); st != 400 || !strings.Contains(e["error"], "use due, late") {
		t.Fatalf("bad state: %d %v", st, e)
	}
	if st := f.do("GET", "/api/v1/kinds/nope/models", "", nil, &e); st != 404 || !strings.Contains(e["error"], `no kind "nope"`) {
		t.Fatalf("unknown kind: %d %v", st, e)
	}

	var d ModelDetail
	if st := f.do("GET", "/api/v1/kinds/items/models/failing-1", "", nil, &d); st != 200 {
		t.Fatalf("status %d", st)
	}
	if d.Summary != "failing since 09:00, 2 attempts; next try at 14:05, a retry (UTC)" {
		t.Fatalf("summary %q", d.Summary)
	}
	if len(d.Timeline.Occurrences) != 5 || d.Timeline.Occurrences[0].Format("2006-01-02T15:04") != "2026-03-05T02:00" {
		t.Fatalf("occurrences %v", d.Timeline.Occurrences)
	}
	// The plan starts at attempt 3 (the model has had 2): retry after 15m,
	// then the delays are used up and the model is disabled.
	plan := d.Timeline.RetryPlan
	if len(plan) != 2 || plan[0].AttemptNo != 3 || plan[0].Decision != "retry" || plan[1].Decision != "disabled" {
		t.Fatalf("plan %+v", plan)
	}
	d = ModelDetail{}
	f.do("GET", "/api/v1/kinds/items/models/ok-1", "", nil, &d)
	if d.Summary != "refreshed at 02:00; next refresh at Mar 5 02:00, a planned run of the schedule (UTC)" {
		t.Fatalf("summary %q", d.Summary)
	}
	d = ModelDetail{}
	f.do("GET", "/api/v1/kinds/items/models/off-3", "", nil, &d)
	if !strings.HasPrefix(d.Summary, "disabled since Feb 2 14:00: Provided URL is invalid;") {
		t.Fatalf("summary %q", d.Summary)
	}
	if st := f.do("GET", "/api/v1/kinds/items/models/nope", "", nil, &e); st != 404 || !strings.Contains(e["error"], `no model "nope"`) {
		t.Fatalf("missing model: %d %v", st, e)
	}
}

func TestActionsNeedToken(t *testing.T) {
	ro := newFixture(t, nil)
	var e map[string]string
	if st := ro.do("POST", "/api/v1/kinds/items/models/off-1/enable", "anything", nil, &e); st != 403 || !strings.Contains(e["error"], "REFRESHER_API_TOKENS") {
		t.Fatalf("read-only: %d %v", st, e)
	}

	f := newFixture(t, map[string]string{"ops": testToken})
	if st := f.do("POST", "/api/v1/kinds/items/models/off-1/enable", "", nil, &e); st != 401 {
		t.Fatalf("no token: %d %v", st, e)
	}
	var c ChangeResult
	if st := f.do("POST", "/api/v1/kinds/items/models/off-1/enable", testToken, nil, &c); st != 200 || c.After.State != "due" || c.After.DisabledAt != nil {
		t.Fatalf("enable: %d %+v", st, c)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/trigger", testToken, nil, &c); st != 200 || c.Note != "refresh due now" {
		t.Fatalf("trigger: %d %+v", st, c)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/trigger?priority=interactive", testToken, nil, &c); st != 200 || c.Note != "refresh due now at priority 0" {
		t.Fatalf("trigger at a priority: %d %+v", st, c)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/trigger?priority=soon", testToken, nil, &e); st != 400 ||
		e["error"] != `priority="soon": use a level of priorities: (eventual, interactive) or a number from -32768 to 32767` {
		t.Fatalf("trigger at a bad priority: %d %v", st, e)
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/nope/trigger", testToken, nil, &e); st != 404 {
		t.Fatalf("trigger missing: %d %v", st, e)
	}
	// Failed authentications: 3 (the fixture's burst; a request without a
	// token guesses nothing and does not count) get 401, then 429; the
	// right token is served all along.
	for i := range 3 {
		if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/trigger", "wrong", nil, &e); st != 401 {
			t.Fatalf("wrong token %d: %d %v", i, st, e)
		}
	}
	if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/trigger", "wrong", nil, &e); st != http.StatusTooManyRequests {
		t.Fatalf("after the burst: %d %v", st, e)
	}
	for i := range 3 {
		if st := f.do("POST", "/api/v1/kinds/items/models/ok-1/trigger", testToken, nil, &c); st != 200 {
			t.Fatalf("the right token after the burst (%d): %d %+v", i, st, c)
		}
	}
}

func TestBulkEnable(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	req := BulkEnableRequest{ReasonLike: "cannot refresh%", DisabledSince: "2026-03-04T08:00:00Z", DryRun: true}
	var r BulkEnableResult
	if st := f.do("POST", "/api/v1/kinds/items/enable", testToken, req, &r); st != 200 || r.Matched != 2 || r.Enabled != 0 || len(r.Sample) != 2 {
		t.Fatalf("dry run: %d %+v", st, r)
	}
	var page ModelPage
	f.do("GET", "/api/v1/kinds/items/models?state=disabled", "", nil, &page)
	if len(page.Items) != 4 {
		t.Fatalf("dry run changed something: %+v", page)
	}
	req.DryRun = false
	if st := f.do("POST", "/api/v1/kinds/items/enable", testToken, req, &r); st != 200 || r.Matched != 2 || r.Enabled != 2 {
		t.Fatalf("enable: %d %+v", st, r)
	}
	page = ModelPage{}
	f.do("GET", "/api/v1/kinds/items/models?state=disabled", "", nil, &page)
	if len(page.Items) != 2 || page.Items[1].UID != "off-3" {
		t.Fatalf("after: %+v", page)
	}
	var e map[string]string
	if st := f.do("POST", "/api/v1/kinds/items/enable", testToken, BulkEnableRequest{}, &e); st != 400 || !strings.Contains(e["error"], "reason_like is required") {
		t.Fatalf("no pattern: %d %v", st, e)
	}
}

func TestLikeRegexp(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{"Cannot refresh%", "cannot REFRESH items after 3", true},
		{"Cannot refresh%", "x Cannot refresh", false},
		{"a_c", "abc", true}, {"a_c", "abbc", false},
		{`100\%`, "100%", true}, {`100\%`, "1000", false},
		{"a.c", "abc", false}, {"%", "", true},
	} {
		re, err := likeRegexp(c.pat)
		if err != nil || re.MatchString(c.s) != c.want {
			t.Errorf("LIKE %q on %q: got %v (err %v), want %v", c.pat, c.s, !c.want, err, c.want)
		}
	}
}

func TestDeadLetters(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	var got struct {
		Total int64
		Items []DeadLetter
	}
	if st := f.do("GET", "/api/v1/kinds/items/dead", "", nil, &got); st != 200 || got.Total != 3 {
		t.Fatalf("dead: %d %+v", st, got)
	}
	first, broken := got.Items[0], got.Items[2]
	if !first.Replayable || first.Message != `{"uid":"gone-1","type":"success"}` || broken.Replayable {
		t.Fatalf("items: %+v", got.Items)
	}
	var r DeadResult
	if st := f.do("POST", "/api/v1/kinds/items/dead/replay", testToken, DeadRequest{IDs: []string{first.ID, broken.ID, "feedfeedfeedfeed"}}, &r); st != 200 ||
		r.Done != 1 || len(r.NotReplayable) != 1 || len(r.Missing) != 1 {
		t.Fatalf("replay: %d %+v", st, r)
	}
	out, _ := f.rdb.LRange(context.Background(), f.kind.Lists.Output, 0, -1).Result()
	if len(out) != 1 || out[0] != `{"uid":"gone-1","type":"success"}` {
		t.Fatalf("output list: %q", out)
	}
	if st := f.do("POST", "/api/v1/kinds/items/dead/discard", testToken, DeadRequest{IDs: []string{broken.ID}}, &r); st != 200 || r.Done != 1 {
		t.Fatalf("discard: %d %+v", st, r)
	}
	if n, _ := f.rdb.LLen(context.Background(), f.kind.Lists.Dead).Result(); n != 1 {
		t.Fatalf("dead list has %d, want 1", n)
	}
}

func TestHealthAndNoSecrets(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	for _, p := range []string{"/healthz", "/readyz"} {
		if st := f.do("GET", p, "", nil, nil); st != 200 {
			t.Fatalf("%s: %d", p, st)
		}
	}
	f.rdb.Close() // Redis no longer answers for this server
	resp, err := http.Get(f.http.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || string(body) != "Redis does not answer (see the service log)\n" {
		t.Fatalf("readyz with Redis closed: %d %q", resp.StatusCode, body)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9090": true, "[::1]:9090": true, "localhost:1": true,
		":9090": false, "0.0.0.0:9090": false, "10.0.0.1:9090": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}

// TestKindsBacklogOnKindsStore: the backlog by priority is counted on the
// kind's own database; the server need not have a default store.
func TestKindsBacklogOnKindsStore(t *testing.T) {
	f := newFixture(t, nil)
	k := f.kind
	k.Store = f.store
	srv, err := New(Options{Kinds: []Kind{k}, Redis: f.rdb, Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/kinds", nil))
	var got struct{ Kinds []KindSummary }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
		t.Fatalf("status %d, %v: %s", rec.Code, err, rec.Body)
	}
	if b := got.Kinds[0].Backlog; !reflect.DeepEqual(b, []models.LevelCount{{Level: 0, Due: 3}}) || got.Kinds[0].Error != "" {
		t.Fatalf("backlog %+v, error %q", b, got.Kinds[0].Error)
	}
}
