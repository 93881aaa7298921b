package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
)

// hourClock is the scripted hour's clock, set by the test.
type hourClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *hourClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *hourClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// The scripted hour: minute by minute on the test's clock, a real service
// dispatches a kind refreshed every minute, a worker played by the test
// answers, and the alert gauges sample the kind; the charts are then read
// as an operator reads them.
const (
	hourRows       = 30 // the kind's rows at the start, each due every minute
	hourPause      = 15 // the kind is paused at this minute ...
	hourResume     = 25 // ... and resumed at this one
	hourNewPerMin  = 10 // rows the app creates each minute of the pause
	hourFailFrom   = 35 // the worker fails every job from this minute ...
	hourFailTo     = 45 // ... to this one (excluded)
	hourDeadMinute = 38 // when the worker sends a result that is not JSON
)

// TestChartsShowTheServicesHour runs an hour of a real service on a fake
// clock, a minute at a time: steady refreshes; a pause of the kind
// (minutes 15 to 24) while the app creates rows, so that a backlog grows
// and waits; the resume, after which the backlog is drained; an incident
// (minutes 35 to 44 the worker fails every job) with a result that is not
// JSON dead-lettered; the recovery. Then it reads the kind's charts in
// headless Chromium at a laptop's and a phone's width (screenshots
// hour-*.png, see newBrowser) and checks that they show it where it
// happened: the pause marked from its first to its last minute, the
// backlog and lateness growing in it and gone after the resume, nothing
// dispatched while paused, the failures and the incident mark in the
// incident's minutes, the dead letter in its minute. The counts are the
// service's own (the push, the incident window's write, the gauges'
// samples), not written by the test.
func TestChartsShowTheServicesHour(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found: run scripts/browser.sh (make test does) or set REFRESHER_CHROMIUM")
	}
	if testing.Short() {
		t.Skip("runs an hour of the service, a minute at a time")
	}
	ctx := context.Background()
	f := newFixture(t, map[string]string{"ops": testToken})
	db := f.store.DB()
	if _, err := db.Exec("CREATE TABLE hour (id BIGINT AUTO_INCREMENT PRIMARY KEY, uid VARCHAR(200) NOT NULL, UNIQUE KEY (uid))"); err != nil {
		t.Fatal(err)
	}
	if _, err := mysqlstore.Migrate(ctx, db, []string{"hour"}, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 4, 13, 0, 0, 0, time.UTC)
	at := func(m int, sec int) time.Time {
		return start.Add(time.Duration(m)*time.Minute + time.Duration(sec)*time.Second)
	}
	hm := func(m int) string { return at(m, 0).Format("15:04") }
	clk := &hourClock{now: at(0, 1)}
	table := models.Table{Name: "hour", Key: "uid"}
	n := 0
	addRows := func(count int) {
		t.Helper()
		var rows []models.Row
		for range count {
			n++
			uid := fmt.Sprintf("r%03d", n)
			if _, err := db.Exec("INSERT INTO hour (uid) VALUES (?)", uid); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, models.Row{Key: uid, State: policy.State{RefreshAt: clk.Now()}})
		}
		if err := f.store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, table, rows) }); err != nil {
			t.Fatal(err)
		}
	}
	addRows(hourRows)

	sched, err := schedule.Parse("DTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY")
	if err != nil {
		t.Fatal(err)
	}
	retry, _ := policy.ParseRetry("delays:1m,1m,1m") // no row is disabled before the incident is seen
	lists := redisio.DefaultLists(strings.TrimSuffix(f.kind.Lists.Input, "items-input") + "hour")
	pol := policy.Policy{Kind: "hour", Timeout: 10 * time.Minute, Retry: retry,
		Guard: policy.Guard{MinResults: 20, Window: 2 * time.Minute, Threshold: 0.5}}
	rio := redisio.New(f.rdb)
	quiet := slog.New(slog.DiscardHandler)
	svc, err := refresher.New(refresher.Config{
		Kinds:      []refresher.Kind{{Name: "hour", Table: table, Lists: lists, Schedule: sched, Policy: pol}},
		InstanceID: "hour-test", MaxSleep: 20 * time.Millisecond, FetchBlock: 20 * time.Millisecond, Heartbeat: 1500 * time.Millisecond, Clock: clk, Logger: quiet,
	}, f.store, rio)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && runCtx.Err() == nil {
			t.Errorf("service: %v", err)
		}
	})
	gauges := refresher.NewGauges(prometheus.NewRegistry(), refresher.GaugeConfig{
		Kinds: []refresher.GaugeKind{{Name: "hour", Table: table, Lists: lists, Inspector: f.store}},
		Redis: rio, Interval: time.Minute, Clock: clk, Logger: quiet})
	admin := refresher.NewAdmin(f.store, rio)

	// answer plays the worker: it answers every job on the input list,
	// with a failure while fail is set.
	answer := func(fail bool) int {
		t.Helper()
		jobs, err := f.rdb.LPopCount(ctx, lists.Input, 1000).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		for _, raw := range jobs {
			var job redisio.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				t.Fatal(err)
			}
			r := redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: "success"}
			if fail {
				r.Type, r.Reason = "failure", "HTTP 503 from upstream"
			}
			b, _ := json.Marshal(r)
			if err := f.rdb.RPush(ctx, lists.Output, b).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return len(jobs)
	}

	for m := range 60 {
		clk.set(at(m, 1))
		switch {
		case m == hourPause:
			if err := admin.PauseKind(ctx, lists, refresher.PauseInfo{Note: "database maintenance", By: "ops", At: clk.Now()}); err != nil {
				t.Fatal(err)
			}
		case m == hourResume:
			if _, err := admin.ResumeKind(ctx, lists); err != nil {
				t.Fatal(err)
			}
		}
		paused := m >= hourPause && m < hourResume
		if paused {
			addRows(hourNewPerMin)
		}
		fail := m >= hourFailFrom && m < hourFailTo
		if m == hourDeadMinute {
			f.rdb.RPush(ctx, lists.Output, "not a result")
		}
		// The minute ends when every due row has been dispatched (none
		// while paused), answered and applied.
		testenv.EventuallyNil(t, 30*time.Second, fmt.Sprintf("minute %d done", m), func() error {
			answer(fail)
			c, err := f.store.Counts(ctx, table, clk.Now(), time.Minute)
			if err != nil {
				return err
			}
			out, _ := f.rdb.LLen(ctx, lists.Output).Result()
			in, _ := f.rdb.LLen(ctx, lists.Input).Result()
			if c.Running > 0 || in > 0 || out > 0 || (!paused && c.Due > 0) {
				return fmt.Errorf("due %d, running %d, input %d, output %d", c.Due, c.Running, in, out)
			}
			// The poller stamps a batch's counts with the clock's time
			// before it acknowledges the batch (and writes them later): the
			// test's clock stays in the minute until then.
			if n, err := f.rdb.LLen(ctx, lists.Processing("hour-test")).Result(); err != nil || n > 0 {
				return fmt.Errorf("processing list: %d results, %v", n, err)
			}
			return nil
		})
		// The gauges count once a minute, half a minute in.
		clk.set(at(m, 30))
		f.rdb.Del(ctx, lists.GaugeLock())
		if _, err := gauges.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	clk.set(at(59, 40))
	testenv.EventuallyNil(t, 30*time.Second, "the hour's counts written", func() error {
		pts, err := rio.ReadStats(ctx, []redisio.Lists{lists}, false, at(0, 0).Unix()/60, 60)
		if err != nil {
			return err
		}
		var sum redisio.StatsCount
		for _, p := range pts[0] {
			sum.Dispatched += p.Dispatched
			sum.Applied += p.Applied
			sum.Dead += p.Dead
		}
		if sum.Applied != sum.Dispatched || sum.Dead != 1 {
			return fmt.Errorf("%d dispatched, %d applied, %d dead-lettered", sum.Dispatched, sum.Applied, sum.Dead)
		}
		return nil
	})
	stop()
	if err := <-done; err != nil && runCtx.Err() == nil {
		t.Fatal(err)
	}
	done <- nil // for the cleanup

	srv, err := New(Options{Kinds: []Kind{{Name: "hour", Table: table, Lists: lists, Schedule: sched, Policy: pol, LateAfter: time.Minute}},
		Store: f.store, Redis: f.rdb, Tokens: map[string]string{"ops": testToken}, Now: clk.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)

	check := func(b *browser, page string) {
		t.Helper()
		var got map[string][]string
		b.run("marks", chromedp.Evaluate(`Object.fromEntries(["dispatched", "applied", "failed", "dead", "backlog", "lateness"].map(id => [id, (`+marks+`)(id)]))`, &got))
		for id, ms := range got {
			if len(ms) != 2 || ms[0] != "paused "+hm(hourPause)+"-"+hm(hourResume-1) || !strings.HasPrefix(ms[1], "incident ") {
				t.Errorf("%s: chart %s marks %q, want the pause %s-%s, then the incident", page, id, ms, hm(hourPause), hm(hourResume-1))
				continue
			}
			// The incident starts with the failures, and ends within the
			// guard's window (2 minutes) of the last one.
			from, to, _ := strings.Cut(strings.TrimPrefix(ms[1], "incident "), "-")
			if from != hm(hourFailFrom) || to < hm(hourFailTo-1) || to > hm(hourFailTo+2) {
				t.Errorf("%s: chart %s marks the incident %s-%s, want it from %s to %s (or up to the guard's window later)",
					page, id, from, to, hm(hourFailFrom), hm(hourFailTo-1))
			}
		}
		var marked string
		var ticks []string
		b.run("marked", chromedp.Text("#chart-marked", &marked, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("#chart-failed text.tick-label")].map(e => e.textContent)`, &ticks))
		if want := "This hour: paused " + hm(hourPause) + "–" + hm(hourResume) + "; incident " + hm(hourFailFrom) + "–"; !strings.HasPrefix(marked, want) {
			t.Errorf("%s: the charts say %q, want %q...", page, marked, want)
		}
		if strings.Join(ticks, " ") != "13:15 13:30 13:45" {
			t.Errorf("%s: the axis is marked at %q, want the quarter hours", page, ticks)
		}
		var v map[string]map[string]int
		b.run("bars", chromedp.Evaluate(`Object.fromEntries(["dispatched", "applied", "failed", "dead", "backlog", "lateness"].map(id => [id, (`+bars+`)(id)]))`, &v))
		backlogPeak := hourRows + hourNewPerMin*(hourResume-hourPause)
		for m := range 60 {
			paused, failing := m >= hourPause && m < hourResume, m >= hourFailFrom && m < hourFailTo
			d, fl, bl, late := v["dispatched"][hm(m)], v["failed"][hm(m)], v["backlog"][hm(m)], v["lateness"][hm(m)]
			switch {
			case paused && (d != 0 || bl != hourRows+hourNewPerMin*(m-hourPause+1) || late < (m-hourPause)*60):
				t.Errorf("%s, %s (paused): dispatched %d (want none), backlog %d (want %d), lateness %d s (want at least %d)",
					page, hm(m), d, bl, hourRows+hourNewPerMin*(m-hourPause+1), late, (m-hourPause)*60)
			case m == hourResume && d < backlogPeak:
				t.Errorf("%s, %s (resumed): dispatched %d, want the backlog of %d", page, hm(m), d, backlogPeak)
			case !paused && bl != 0:
				t.Errorf("%s, %s: backlog %d after the minute's dispatch, want none", page, hm(m), bl)
			case v["applied"][hm(m)] != d:
				t.Errorf("%s, %s: %d applied, want the %d dispatched (the worker answers at once)", page, hm(m), v["applied"][hm(m)], d)
			case failing != (fl > 0):
				t.Errorf("%s, %s: %d failed", page, hm(m), fl)
			}
		}
		if len(v["dead"]) != 1 || v["dead"][hm(hourDeadMinute)] != 1 {
			t.Errorf("%s: dead letters %v, want 1 at %s", page, v["dead"], hm(hourDeadMinute))
		}
	}
	b := newBrowser(t, bin, chromedp.EmulateViewport(1366, 860))
	b.run("kind", chromedp.Navigate(h.URL+"/kinds/hour"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), b.shot("hour-1-kind"))
	check(b, "the kind page")
	b.run("overview", chromedp.Navigate(h.URL+"/"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), b.shot("hour-2-overview"))
	check(b, "the overview")
	b.run("day", chromedp.Navigate(h.URL+"/kinds/hour?span=day"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), b.shot("hour-3-day"))
	var day []string
	b.run("day marks", chromedp.Evaluate(`(`+marks+`)("failed")`, &day))
	if len(day) != 2 || !strings.HasPrefix(day[0], "paused 13:10-13:20") || !strings.HasPrefix(day[1], "incident 13:30-13:40") {
		t.Errorf("the day's chart marks %q, want the pause's ten minutes 13:10-13:20 and the incident's 13:30-13:40", day)
	}
	p := newBrowser(t, bin, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	p.run("phone", chromedp.Navigate(h.URL+"/kinds/hour"), chromedp.WaitVisible("#chart-backlog", chromedp.ByQuery), p.shot("hour-4-phone-kind"))
	check(p, "the kind page at the phone's width")
}
