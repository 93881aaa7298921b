package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/refresher/refresher/redisio"
)

// scriptHour writes an hour of the kind's activity ending at now, as the
// service would have (redisio's counts and gauge samples), and returns the
// minute each phase starts ("15:04"): a steady quarter hour; a pause of
// ten minutes (minutes 15 to 24) while the backlog grows to 200; an
// incident of ten minutes (25 to 34) in which most results fail and 3 are
// dead-lettered, the backlog draining; then a recovery in which the
// backlog is gone by minute 45.
func (f *fixture) scriptHour(t *testing.T) (pause, incident, drained [2]string) {
	t.Helper()
	ctx := context.Background()
	c := redisio.New(f.rdb)
	start := now.Add(-59 * time.Minute).Truncate(time.Minute)
	at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
	hm := func(m int) string { return at(m).Format("15:04") }
	for m := range 60 {
		var n redisio.StatsCount
		s := redisio.StatsSample{At: at(m)}
		inc := false
		switch {
		case m < 15:
			n = redisio.StatsCount{Dispatched: 40, Applied: 38, Failed: 2}
			s.Backlog, s.LatenessSeconds = 10, 20
		case m < 25: // paused: nothing dispatched, the last results come in
			n = redisio.StatsCount{Applied: int64(max(0, 30-10*(m-15)))}
			s.Backlog, s.LatenessSeconds, s.Paused = 10+int64(m-14)*19, int64(m-14)*60, true
		case m < 35: // the incident: most results fail
			n = redisio.StatsCount{Dispatched: 120, Applied: 120, Failed: 100}
			if m == 27 {
				n.Dead = 3
			}
			inc = true
			s.Backlog, s.LatenessSeconds = 200-int64(m-24)*10, 600-int64(m-24)*40
		default: // recovered: the backlog drains by minute 45
			n = redisio.StatsCount{Dispatched: 60, Applied: 60, Failed: 1}
			s.Backlog, s.LatenessSeconds = max(0, 100-int64(m-34)*10), max(10, 200-int64(m-34)*20)
		}
		if err := c.AddStats(ctx, []redisio.StatsAdd{{Lists: f.kind.Lists, At: at(m), Count: n, Incident: inc}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ShareGauges(ctx, []redisio.Lists{f.kind.Lists}, [][]byte{[]byte("{}")}, []redisio.StatsSample{s}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	return [2]string{hm(15), hm(24)}, [2]string{hm(25), hm(34)}, [2]string{hm(44), hm(45)}
}

// marks is a script: the runs marked in a chart, as "kind from-to".
const marks = `(id) => [...document.querySelectorAll("#chart-" + id + " rect.mark")].map(r =>
	r.classList[1].replace("mark-", "") + " " + r.dataset.from + "-" + r.dataset.to)`

// bars is a script: a chart's bars, minute -> value.
const bars = `(id) => Object.fromEntries([...document.querySelectorAll("#chart-" + id + " rect.bar")].map(r => [r.dataset.at, +r.dataset.value]))`

// TestChartsShowAScriptedHour renders an hour with a pause, an incident and
// a backlog drained on the kind's page and the overview, at a laptop's and
// a phone's width, and checks that the charts show each where it happened:
// the marks at their minutes, the backlog's peak at the pause's end, no
// backlog once drained, the dead letters at their minute. Screenshots:
// charts-*.png (see newBrowser).
func TestChartsShowAScriptedHour(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found: run scripts/browser.sh (make test does) or set REFRESHER_CHROMIUM")
	}
	f := newFixture(t, nil)
	pause, incident, drained := f.scriptHour(t)
	wantMarks := []string{"paused " + pause[0] + "-" + pause[1], "incident " + incident[0] + "-" + incident[1]}

	check := func(b *browser, page string) {
		t.Helper()
		for _, id := range []string{"dispatched", "applied", "failed", "dead", "backlog", "lateness"} {
			var got []string
			b.run("marks of "+id, chromedp.Evaluate("("+marks+")("+fmt.Sprintf("%q", id)+")", &got))
			if strings.Join(got, ", ") != strings.Join(wantMarks, ", ") {
				t.Errorf("%s: chart %s marks %q, want %q", page, id, got, wantMarks)
			}
		}
		var backlog, dispatched, dead map[string]int
		b.run("bars", chromedp.Evaluate(`(`+bars+`)("backlog")`, &backlog), chromedp.Evaluate(`(`+bars+`)("dispatched")`, &dispatched),
			chromedp.Evaluate(`(`+bars+`)("dead")`, &dead))
		if backlog[pause[1]] != 200 || backlog[drained[0]] != 0 || backlog[drained[1]] != 0 {
			t.Errorf("%s: backlog %d at the pause's end (want 200), %d and %d once drained (want none): %v",
				page, backlog[pause[1]], backlog[drained[0]], backlog[drained[1]], backlog)
		}
		if dispatched[pause[0]] != 0 || dispatched[incident[0]] != 120 {
			t.Errorf("%s: dispatched %d in the pause (want none), %d in the incident (want 120)", page, dispatched[pause[0]], dispatched[incident[0]])
		}
		if len(dead) != 1 {
			t.Errorf("%s: dead letters in %d minutes, want 1: %v", page, len(dead), dead)
		}
	}

	b := newBrowser(t, bin, chromedp.EmulateViewport(1366, 860))
	b.run("kind", chromedp.Navigate(f.http.URL+"/kinds/items"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), b.shot("charts-1-kind"))
	check(b, "the kind page")
	b.run("overview", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), b.shot("charts-2-overview"))
	check(b, "the overview")
	b.run("day", chromedp.Navigate(f.http.URL+"/kinds/items?span=day"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), b.shot("charts-3-day"))
	var day []string
	b.run("day marks", chromedp.Evaluate(`(`+marks+`)("failed")`, &day))
	if len(day) < 2 || !strings.HasPrefix(day[0], "paused ") || !strings.HasPrefix(day[len(day)-1], "incident ") {
		t.Errorf("the day's chart marks %q, want the pause then the incident", day)
	}

	p := newBrowser(t, bin, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	for _, page := range []string{"/kinds/items", "/"} {
		p.run("phone "+page, chromedp.Navigate(f.http.URL+page), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery),
			p.shot("charts-phone"+strings.ReplaceAll(page, "/", "-")))
		check(p, page+" at the phone's width")
		var sw, cw int
		var sizes []float64
		var off []string
		p.run("measure", chromedp.Evaluate("document.documentElement.scrollWidth", &sw), chromedp.Evaluate("document.documentElement.clientWidth", &cw),
			chromedp.Evaluate(`[...document.querySelectorAll(".chart text")].map(e => e.getBoundingClientRect().height)`, &sizes),
			chromedp.Evaluate(`(`+offScreen+`)(".chart text")`, &off))
		if sw > cw {
			t.Errorf("%s at %d px scrolls sideways: %d px wide", page, phoneWidth, sw)
		}
		if len(off) > 0 {
			t.Errorf("%s at %d px: chart text off screen: %q", page, phoneWidth, off)
		}
		for _, h := range sizes {
			if h < 14 {
				t.Errorf("%s: chart text %.1f px high at %d px wide, too small to read", page, h, phoneWidth)
				break
			}
		}
	}
}
