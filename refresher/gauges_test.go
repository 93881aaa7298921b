package refresher

import (
	"context"
	"database/sql"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

type fixedClock time.Time

// gaugeTable opens a test database with a migrated table name (key id) and
// closes it when the test ends.
func gaugeTable(t *testing.T, name string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, testenv.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE " + name + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := mysqlstore.Migrate(ctx, db, []string{name}, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	return db
}

func (c fixedClock) Now() time.Time { return time.Time(c) }

// TestGaugesOneInstanceComputes checks the gauges' values and that of two
// instances only the one holding the lock counts, the other reporting its
// snapshot.
func TestGaugesOneInstanceComputes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := gaugeTable(t, "g")
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	store := mysqlstore.New(db)
	tbl := models.Table{Name: "g", Key: "id"}
	rows := []models.Row{
		{Key: "1", State: policy.State{RefreshAt: now.Add(-90 * time.Second), AttemptNo: 4, FailingSince: now}},
		{Key: "2", State: policy.State{RefreshAt: now.Add(time.Hour)}},
		{Key: "3", State: policy.State{DisabledAt: now, AttemptNo: 2}},
	}
	for _, r := range rows {
		db.Exec("INSERT INTO g (id) VALUES (?)", r.Key)
	}
	if err := store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }); err != nil {
		t.Fatal(err)
	}
	rdb, prefix := testenv.Redis(t)
	lists := redisio.DefaultLists(prefix + "g")
	rdb.RPush(ctx, lists.Dead, "a", "b")
	if _, err := NewAdmin(store, redisio.New(rdb)).Pause(ctx, tbl, lists, []string{"2"}, PauseInfo{Note: "upstream migrates", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := NewAdmin(store, redisio.New(rdb)).PauseKind(ctx, lists, PauseInfo{Note: "incident", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	cfg := GaugeConfig{Kinds: []GaugeKind{{Name: "g", Table: tbl, Lists: lists, Priority: "interactive"}},
		Priorities: []GaugePriority{{Name: "interactive", Level: 0, MaxAttempts: 2, MaxAge: 30 * time.Second}},
		Inspector:  store, Redis: redisio.New(rdb), Interval: time.Minute, Clock: fixedClock(now)}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a, b := NewGauges(regA, cfg), NewGauges(regB, cfg)
	if computed, err := a.Tick(ctx); err != nil || !computed {
		t.Fatalf("first instance: computed %v, err %v", computed, err)
	}
	if computed, err := b.Tick(ctx); err != nil || computed {
		t.Fatalf("second instance: computed %v (want false: the lock is held), err %v", computed, err)
	}
	if err := testutil.GatherAndCompare(regA, strings.NewReader(`
# HELP refresher_priority_alert_max_age_seconds The age of the oldest due row at which a kind of this priority alerts (priorities: in the config).
# TYPE refresher_priority_alert_max_age_seconds gauge
refresher_priority_alert_max_age_seconds{level="0",priority="interactive"} 30
# HELP refresher_priority_alert_max_attempts The refresh_attempt_no at which a kind of this priority alerts (priorities: in the config).
# TYPE refresher_priority_alert_max_attempts gauge
refresher_priority_alert_max_attempts{level="0",priority="interactive"} 2
`), "refresher_priority_alert_max_age_seconds", "refresher_priority_alert_max_attempts"); err != nil {
		t.Error(err)
	}
	for _, g := range []*Gauges{a, b} {
		for name, c := range map[string]struct {
			got, want float64
		}{
			"oldest age":  {testutil.ToFloat64(g.oldest.WithLabelValues("g", "interactive")), 90},
			"max attempt": {testutil.ToFloat64(g.maxAttempt.WithLabelValues("g", "interactive")), 4},
			"disabled":    {testutil.ToFloat64(g.models.WithLabelValues("g", "interactive", "disabled")), 1},
			"late":        {testutil.ToFloat64(g.models.WithLabelValues("g", "interactive", "late")), 1},
			"dead":        {testutil.ToFloat64(g.lists.WithLabelValues("g", "dead")), 2},
			"paused":      {testutil.ToFloat64(g.models.WithLabelValues("g", "interactive", "paused")), 1},
			"kind paused": {testutil.ToFloat64(g.kindPaused.WithLabelValues("g")), 1},
			"backlog":     {testutil.ToFloat64(g.backlog.WithLabelValues("g", "0")), testutil.ToFloat64(g.models.WithLabelValues("g", "interactive", "due"))},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %v, want %v", name, c.got, c.want)
			}
		}
	}
}

// TestGaugesPauseEndsAndSeriesExistFromTheStart checks that every series of
// every kind exists at 0 before the first count (paused and kind_paused
// included), and that a resumed kind and model go back to 0.
func TestGaugesPauseEndsAndSeriesExistFromTheStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	lists := redisio.DefaultLists(prefix + "k")
	db := gaugeTable(t, "k")
	reg := prometheus.NewRegistry()
	g := NewGauges(reg, GaugeConfig{Kinds: []GaugeKind{{Name: "k", Table: models.Table{Name: "k", Key: "id"}, Lists: lists, Priority: "eventual"}},
		Inspector: mysqlstore.New(db), Redis: redisio.New(rdb), Interval: time.Minute})
	for name, want := range map[string]int{"models": 7, "models_estimated": 6, "kind_paused": 1, "list_length": 3, "oldest_due_age_seconds": 1, "max_attempt_no": 1} {
		if n := testutil.CollectAndCount(reg, "refresher_"+name); n != want {
			t.Errorf("before the first count: %d series of refresher_%s, want %d", n, name, want)
		}
	}
	if v := testutil.ToFloat64(g.models.WithLabelValues("k", "eventual", "paused")); v != 0 {
		t.Errorf("paused before the first count: %v", v)
	}
	kindKey, hash := lists.KindPause(), lists.PausedModels()
	rdb.Set(ctx, kindKey, `{"note":"x"}`, 0)
	rdb.HSet(ctx, hash, "a", "{}", "b", "{}", "c", "{}")
	if _, err := g.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if p, k := testutil.ToFloat64(g.models.WithLabelValues("k", "eventual", "paused")), testutil.ToFloat64(g.kindPaused.WithLabelValues("k")); p != 3 || k != 1 {
		t.Fatalf("paused: %v models, kind %v; want 3 and 1", p, k)
	}
	if _, err := NewAdmin(nil, redisio.New(rdb)).ResumeKind(ctx, lists); err != nil {
		t.Fatal(err)
	}
	rdb.HDel(ctx, hash, "a", "b", "c")
	rdb.Del(ctx, lists.GaugeLock())
	if _, err := g.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if p, k := testutil.ToFloat64(g.models.WithLabelValues("k", "eventual", "paused")), testutil.ToFloat64(g.kindPaused.WithLabelValues("k")); p != 0 || k != 0 {
		t.Fatalf("after resuming: %v paused models, kind %v; want 0 and 0", p, k)
	}
}

// TestGaugesLoneInstanceCountsEveryTick: an instance alone counts at each
// tick of its Interval, not every other one, however late a tick takes the
// lock. Its Redis hangs from before the second tick to 0.3 Interval after
// it, so that tick takes the lock late: a lock that lived 0.9 Interval from
// then was still held at the third tick, which did not count (under load
// this happened by itself). The lock of a period never meets the next
// period's tick.
func TestGaugesLoneInstanceCountsEveryTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := gaugeTable(t, "lone")
	_, prefix := testenv.Redis(t)
	proxy, u := testenv.RedisProxy(t)
	rdb, err := redisio.Open(ctx, u, redisio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	in := &callCounting{Inspector: mysqlstore.New(db)}
	const interval = 500 * time.Millisecond
	g := NewGauges(prometheus.NewRegistry(), GaugeConfig{
		Kinds:     []GaugeKind{{Name: "lone", Table: models.Table{Name: "lone", Key: "id"}, Lists: redisio.DefaultLists(prefix + "lone")}},
		Inspector: in, Redis: redisio.New(rdb), Interval: interval})
	runCtx, cancel := context.WithTimeout(ctx, 6*interval+3*interval/4)
	defer cancel()
	go func() {
		time.Sleep(interval * 8 / 10)
		proxy.Freeze()
		time.Sleep(interval / 2)
		proxy.Restore()
	}()
	g.Run(runCtx) // ticks at 0, 1 (its lock at 1.3), 2, ..., 6 intervals
	if n := in.counts.Load(); n < 7 {
		t.Fatalf("counted %d times in 7 ticks, want 7", n)
	}
}

// TestGaugesByPriorityLevel checks the alert gauges by the rows' priority
// level: the oldest due row and the highest attempt of each level, a level
// with no due row included, and the kind's level from the start.
func TestGaugesByPriorityLevel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := gaugeTable(t, "gl")
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	store := mysqlstore.New(db)
	tbl := models.Table{Name: "gl", Key: "id", Priority: 10}
	rows := []models.Row{
		{Key: "1", State: policy.State{RefreshAt: now.Add(-90 * time.Second), AttemptNo: 1}},
		{Key: "2", State: policy.State{RefreshAt: now.Add(-40 * time.Second), AttemptNo: 3, FailingSince: now}},
		{Key: "3", State: policy.State{RefreshAt: now.Add(time.Hour), AttemptNo: 7, FailingSince: now}},
		{Key: "4", State: policy.State{RefreshAt: now.Add(-10 * time.Second)}},
	}
	for _, r := range rows {
		db.Exec("INSERT INTO gl (id) VALUES (?)", r.Key)
	}
	if err := store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }); err != nil {
		t.Fatal(err)
	}
	// 2 is interactive (level 0); 3 eventual (20), failing, not due; 4 is
	// at the kind's level but triggered at 0 ("refresh now").
	for _, q := range []string{"UPDATE gl SET refresh_priority = 0 WHERE id = 2", "UPDATE gl SET refresh_priority = 20 WHERE id = 3",
		"UPDATE gl SET refresh_priority_once = 0 WHERE id = 4"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	rdb, prefix := testenv.Redis(t)
	cfg := GaugeConfig{Kinds: []GaugeKind{{Name: "gl", Table: tbl, Lists: redisio.DefaultLists(prefix + "gl"), Priority: "normal"}},
		Inspector: store, Redis: redisio.New(rdb), Interval: time.Minute, Clock: fixedClock(now)}
	reg := prometheus.NewRegistry()
	g := NewGauges(reg, cfg)
	if n := testutil.CollectAndCount(g.levelOldest); n != 1 {
		t.Errorf("before the first count: %d level series, want the kind's level only", n)
	}
	if computed, err := g.Tick(ctx); err != nil || !computed {
		t.Fatalf("computed %v, err %v", computed, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP refresher_max_attempt_no_by_level Highest refresh_attempt_no of the rows of each priority level (as for oldest_due_age_by_level_seconds).
# TYPE refresher_max_attempt_no_by_level gauge
refresher_max_attempt_no_by_level{kind="gl",level="0"} 3
refresher_max_attempt_no_by_level{kind="gl",level="10"} 1
refresher_max_attempt_no_by_level{kind="gl",level="20"} 7
# HELP refresher_oldest_due_age_by_level_seconds Age of the oldest due row of each priority level (now - refresh_at); 0 when none is due. A row's level is its refresh_priority, else the kind's; a row triggered at a one-shot priority counts at both levels until claimed.
# TYPE refresher_oldest_due_age_by_level_seconds gauge
refresher_oldest_due_age_by_level_seconds{kind="gl",level="0"} 40
refresher_oldest_due_age_by_level_seconds{kind="gl",level="10"} 90
refresher_oldest_due_age_by_level_seconds{kind="gl",level="20"} 0
`), "refresher_oldest_due_age_by_level_seconds", "refresher_max_attempt_no_by_level"); err != nil {
		t.Error(err)
	}
}

// estimatingInspector answers Counts as a driver does on a table too
// large to count: the total and the failing rows are estimates.
type estimatingInspector struct{ models.Inspector }

func (e estimatingInspector) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	c, err := e.Inspector.Counts(ctx, t, now, lateAfter)
	c.Total, c.TotalEstimated = 12_345_678, true
	c.Failing, c.Estimated = 234_567, []models.RowState{models.StateFailing}
	return c, err
}

// TestGaugesLabelEstimates: refresher_models_estimated is 1 for the states
// whose count is an estimate, 0 for the others, and refresher_models has
// the estimate.
func TestGaugesLabelEstimates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := gaugeTable(t, "ge")
	rdb, prefix := testenv.Redis(t)
	reg := prometheus.NewRegistry()
	g := NewGauges(reg, GaugeConfig{Kinds: []GaugeKind{{Name: "ge", Table: models.Table{Name: "ge", Key: "id"}, Lists: redisio.DefaultLists(prefix + "ge"), Priority: "eventual"}},
		Inspector: estimatingInspector{mysqlstore.New(db)}, Redis: redisio.New(rdb), Interval: time.Minute})
	if _, err := g.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	for state, want := range map[string]float64{"total": 1, "due": 0, "late": 0, "running": 0, "failing": 1, "disabled": 0} {
		if v := testutil.ToFloat64(g.estimated.WithLabelValues("ge", "eventual", state)); v != want {
			t.Errorf("refresher_models_estimated{state=%q} = %v, want %v", state, v, want)
		}
	}
	if v := testutil.ToFloat64(g.models.WithLabelValues("ge", "eventual", "failing")); v != 234_567 {
		t.Errorf("failing: %v, want the estimate", v)
	}
}
