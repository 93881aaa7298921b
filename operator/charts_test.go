package operator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// The kind's page and the overview draw the scripted hour's marks at their
// minutes and the day's span on ?span=day, without a browser; a second
// look within chartTTL answers from the cache, not from Redis.
func TestChartsMarkThePauseAndTheIncident(t *testing.T) {
	f := newFixture(t, nil)
	pause, incident, _ := f.scriptHour(t)
	for _, path := range []string{"/kinds/items", "/"} {
		code, _, body := f.get("GET", path)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		for _, want := range []string{
			`id="chart-dispatched"`, `id="chart-lateness"`,
			`class="mark mark-paused" data-from="` + pause[0] + `" data-to="` + pause[1] + `"`,
			`class="mark mark-incident" data-from="` + incident[0] + `" data-to="` + incident[1] + `"`,
			`data-at="` + pause[1] + `" data-value="200"`, // the backlog's peak
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: no %s", path, want)
			}
		}
		if n := strings.Count(body, `class="mark mark-paused"`); n != 6 {
			t.Errorf("%s: the pause is marked on %d charts, want all 6", path, n)
		}
	}
	_, _, day := f.get("GET", "/kinds/items?span=day")
	if !strings.Contains(day, "Last day") || !strings.Contains(day, `class="mark mark-incident"`) {
		t.Errorf("the day's span: no heading or no incident mark")
	}

	// Cached: a minute written now does not show until chartTTL has passed.
	c := redisio.New(f.rdb)
	if err := c.AddStats(context.Background(), []redisio.StatsAdd{{Lists: f.kind.Lists, At: now, Count: redisio.StatsCount{Dead: 9}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, body := f.get("GET", "/kinds/items"); strings.Contains(body, `max 9 `) {
		t.Errorf("the charts were read again within %s", chartTTL)
	}
	f.srv.chartCache.mu.Lock()
	for k, e := range f.srv.chartCache.entries {
		e.read = e.read.Add(-chartTTL)
		f.srv.chartCache.entries[k] = e
	}
	f.srv.chartCache.mu.Unlock()
	if _, _, body := f.get("GET", "/kinds/items"); !strings.Contains(body, `max 9 `) {
		t.Errorf("the charts were not read again after %s", chartTTL)
	}
}

// The API answers the charts' figures as JSON, and refuses a span it does
// not know with a message that says which exist.
func TestActivityAPI(t *testing.T) {
	f := newFixture(t, nil)
	pause, incident, _ := f.scriptHour(t)
	code, _, body := f.get("GET", "/api/v1/kinds/items/activity")
	if code != 200 {
		t.Fatalf("activity: %d %s", code, body)
	}
	var got struct {
		Span        string          `json:"span"`
		StepSeconds int             `json:"step_seconds"`
		Points      []ActivityPoint `json:"points"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Span != "hour" || got.StepSeconds != 60 || len(got.Points) != 60 {
		t.Fatalf("span %q, step %d, %d points", got.Span, got.StepSeconds, len(got.Points))
	}
	at := map[string]ActivityPoint{}
	for _, p := range got.Points {
		at[p.At.Format("15:04")] = p
	}
	if p := at[pause[1]]; !p.Paused || p.Backlog != 200 || p.Dispatched != 0 {
		t.Errorf("the pause's last minute: %+v", p)
	}
	if p := at[incident[0]]; !p.Incident || p.Failed != 100 {
		t.Errorf("the incident's first minute: %+v", p)
	}
	if last := got.Points[59].At; !last.Equal(now.Truncate(time.Minute)) {
		t.Errorf("the last point is at %s, want now's minute %s", last, now)
	}
	code, _, body = f.get("GET", "/api/v1/kinds/items/activity?span=week")
	if code != 400 || !strings.Contains(body, "span=day") {
		t.Errorf("span=week: %d %s", code, body)
	}
}

// The line under the charts writes the marked runs out: from the first
// marked minute's start to the last one's end; a run that began before the
// span, or goes on at its end, says so. The axis is marked at the quarter
// hours, away from the ends' labels.
func TestChartsWriteTheMarksOut(t *testing.T) {
	start := time.Date(2026, 3, 4, 13, 0, 0, 0, time.UTC)
	act := refresher.Activity{Span: refresher.LastHour, Start: start, Points: make([]redisio.StatsPoint, 60)}
	if v := drawCharts(act, "/"); !v.Quiet {
		t.Errorf("an hour without anything is not said to be quiet")
	}
	for m := range 60 {
		act.Points[m].Paused = m < 5 || (m >= 15 && m < 25)
		act.Points[m].Incident = m >= 50
	}
	v := drawCharts(act, "/")
	if v.Quiet {
		t.Errorf("an hour with a pause is said to be quiet")
	}
	want := "paused until 13:05 (since before 13:00), paused 13:15–13:25, incident since 13:50, still"
	if got := strings.Join(v.Marked, ", "); got != want {
		t.Errorf("marked %q, want %q", got, want)
	}
	var ticks []string
	for _, tk := range v.Ticks {
		ticks = append(ticks, tk.Text)
	}
	if strings.Join(ticks, " ") != "13:15 13:30 13:45" {
		t.Errorf("ticks %q, want the quarter hours", ticks)
	}
	// An hour from 14:23 to 15:22: 14:30 and 15:15 are too near its ends'
	// labels.
	act.Start = time.Date(2026, 3, 4, 14, 23, 0, 0, time.UTC)
	ticks = nil
	for _, tk := range drawCharts(act, "/").Ticks {
		ticks = append(ticks, tk.Text)
	}
	if strings.Join(ticks, " ") != "14:45 15:00" {
		t.Errorf("ticks from 14:23 %q, want 14:45 15:00", ticks)
	}
	for m := range 60 {
		act.Points[m].Paused, act.Points[m].Incident = true, false
	}
	if v := drawCharts(act, "/"); strings.Join(v.Marked, ", ") != "paused all the last hour" {
		t.Errorf("a pause of the whole hour: %q", v.Marked)
	}
}

// The span's links keep the kind page's state tab and search, and the
// state tabs, the search and the next page keep the day's span: switching
// one does not reset the other.
func TestChartsSpanAndStateStay(t *testing.T) {
	f := newFixture(t, nil)
	_, _, body := f.get("GET", "/kinds/items?state=failing&q=503&span=day")
	for _, want := range []string{
		`href="/kinds/items?q=503&amp;state=failing&amp;span=hour"`,
		`href="/kinds/items?state=late&amp;q=503&amp;span=day"`,
		`<input type="hidden" name="span" value="day">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s", want)
		}
	}
	_, _, body = f.get("GET", "/kinds/items?state=late")
	if strings.Contains(body, "span=day&") || strings.Contains(body, `name="span"`) {
		t.Errorf("the hour's page carries the day's span")
	}
	if !strings.Contains(body, `href="/kinds/items?state=late&amp;span=day"`) {
		t.Errorf("the day's link does not keep the state tab")
	}
}
