package operator

import (
	"context"
	"strings"
	"testing"

	"github.com/refresher/refresher/redisio"
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
