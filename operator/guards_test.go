package operator

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// holdGroup holds throttle group g of the fixture's kind until until, in
// the Redis sorted set the poller writes (docs/schedules.md: "<input list>:throttle").
func (f *fixture) holdGroup(g string, until time.Time) {
	f.t.Helper()
	if err := redisio.New(f.rdb).Hold(context.Background(), f.kind.Lists.Input+":throttle", g, until, now); err != nil {
		f.t.Fatal(err)
	}
}

// incident writes results and failures into the current minute's bucket
// of the kind's incident window (docs/operating.md: "<input list>:incident:<unix
// minute>"), as the poller does.
func (f *fixture) incident(results, failures int) {
	f.t.Helper()
	key := f.kind.Lists.Input + ":incident:" + strconv.FormatInt(now.Unix()/60, 10)
	if err := redisio.New(f.rdb).Add(context.Background(), []redisio.Tally{{Key: key, Results: results, Failures: failures, TTL: 10 * time.Minute}}, ""); err != nil {
		f.t.Fatal(err)
	}
}

// TestModelShowsThrottleHoldAndIncident: a model whose throttle group is
// held says so in its summary and JSON (and one planned after the hold
// says that the hold ends first); a model of another group, or of none,
// shows nothing; an incident of the kind shows on the model, in its retry
// plan (failures do not count, nobody is disabled) and on /kinds.
func TestModelShowsThrottleHoldAndIncident(t *testing.T) {
	f := newFixture(t, nil)
	var d ModelDetail
	f.do("GET", "/api/v1/kinds/items/models/failing-1", "", nil, &d)
	if d.Throttle != nil || d.Incident != nil || d.Summary != "failing since 09:00, 2 attempts; next try at 14:05, a retry (UTC)" {
		t.Fatalf("before any hold: %+v %+v %q", d.Throttle, d.Incident, d.Summary)
	}

	f.holdGroup("api.example.com", now.Add(10*time.Minute))
	f.holdGroup("elsewhere.example.com", now.Add(time.Hour))
	f.holdGroup("other.example.com", now.Add(-time.Minute)) // over: not held
	f.incident(50, 45)

	var raw map[string]any
	f.do("GET", "/api/v1/kinds/items/models/failing-1", "", nil, &raw)
	if th, _ := raw["throttle"].(map[string]any); th["group"] != "api.example.com" || th["until"] != "2026-03-04T14:10:00Z" {
		t.Fatalf("JSON throttle: %v", raw["throttle"])
	}
	if inc, _ := raw["incident"].(map[string]any); inc["active"] != true || inc["results"] != 50.0 || inc["failures"] != 45.0 {
		t.Fatalf("JSON incident: %v", raw["incident"])
	}
	d = ModelDetail{}
	f.do("GET", "/api/v1/kinds/items/models/failing-1", "", nil, &d)
	want := "held with its throttle group api.example.com until 14:10 after a Retry-After: it does not start before then, " +
		"and the wait is not counted as an attempt; failing since 09:00, 2 attempts; next try at 14:05, a retry; " +
		"the kind is in an incident (45 of 50 results failed in the last 5m): failures do not count and disable nobody (UTC)"
	if d.Summary != want {
		t.Fatalf("summary:\n got %q\nwant %q", d.Summary, want)
	}
	// During the incident the plan never disables (delays:1m,5m,15m would
	// after attempt 3) and the attempts do not count.
	if len(d.Timeline.RetryPlan) != timelineLen {
		t.Fatalf("plan during an incident: %+v", d.Timeline.RetryPlan)
	}
	for _, p := range d.Timeline.RetryPlan {
		if p.Decision == "disabled" || p.AttemptNo != 2 {
			t.Fatalf("plan during an incident: %+v", d.Timeline.RetryPlan)
		}
	}
	if start := d.Timeline.RetryPlan[0].StartedAt; !start.Equal(now.Add(10 * time.Minute)) {
		t.Fatalf("the plan starts at %v, not at the hold's end", start)
	}

	d = ModelDetail{}
	f.do("GET", "/api/v1/kinds/items/models/ok-1", "", nil, &d)
	if d.Throttle == nil || !strings.HasPrefix(d.Summary, "its throttle group api.example.com is held until 14:10, before its next refresh; refreshed at 02:00;") {
		t.Fatalf("ok-1: %+v %q", d.Throttle, d.Summary)
	}
	for _, uid := range []string{"due-1", "late-1"} { // a hold that ended; no group
		d = ModelDetail{}
		f.do("GET", "/api/v1/kinds/items/models/"+uid, "", nil, &d)
		if d.Throttle != nil || strings.Contains(d.Summary, "throttle") {
			t.Fatalf("%s: %+v %q", uid, d.Throttle, d.Summary)
		}
	}

	var got struct{ Kinds []KindSummary }
	f.do("GET", "/api/v1/kinds", "", nil, &got)
	k := got.Kinds[0]
	if k.Incident == nil || *k.Incident != (refresher.IncidentState{Active: true, Results: 50, Failures: 45, WindowSeconds: 300}) || k.ThrottledGroups != 2 {
		t.Fatalf("kinds: incident %+v, %d groups held", k.Incident, k.ThrottledGroups)
	}
}
