package refresher

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// DefaultGaugeInterval is GaugeConfig.Interval's default.
const DefaultGaugeInterval = 15 * time.Second

// GaugeKind is one kind as the alert gauges see it.
type GaugeKind struct {
	Name      string
	Table     models.Table
	Lists     redisio.Lists
	LateAfter time.Duration // default 1m
	// Priority labels the kind's gauges: the name of its priority level
	// ("" allowed).
	Priority string
	// Inspector counts the kind's rows: its database. Default
	// GaugeConfig.Inspector.
	Inspector models.Inspector
}

// GaugePriority is one named priority level and its alert thresholds,
// exported as refresher_priority_alert_max_attempts and
// refresher_priority_alert_max_age_seconds so that one alert rule serves
// every priority (deploy/prometheus/alerts.yml).
type GaugePriority struct {
	Name        string
	Level       int
	MaxAttempts int
	MaxAge      time.Duration
}

// GaugeConfig configures Gauges.
type GaugeConfig struct {
	Kinds []GaugeKind
	// Priorities are the configured priority levels with their alert
	// thresholds.
	Priorities []GaugePriority
	// Inspector counts the rows of the kinds without one of their own.
	Inspector models.Inspector
	Redis     *redisio.Client
	// Interval is how often the gauges are computed, by all instances
	// together: one instance counts a kind once per Interval (per period
	// of the Unix time, see Tick). Default 15s.
	Interval time.Duration
	// Counter owns the kinds' counts: give the operator's server the same
	// one, so that the gauges take the dashboard's count while it is fresh
	// (see GaugeShareAge) and the dashboard takes theirs. Default: a
	// Counter of the gauges' own.
	Counter *Counter
	Clock   Clock
	Logger  *slog.Logger
}

// GaugeShareAge is the oldest count of a kind (made by the dashboard, see
// GaugeConfig.Counter) that the gauges report rather than count again: a
// third of the Interval, at most 5 s, the dashboard's refresh. The gauges
// then still move every Interval, and report the kind as it was at most
// that long before their tick.
func GaugeShareAge(interval time.Duration) time.Duration {
	return min(interval/3, 5*time.Second)
}

// Gauges are the alert gauges of seed 004 (max age and max attempts, by
// priority) and the counts behind them:
//
//	refresher_oldest_due_age_seconds{kind,priority}
//	refresher_max_attempt_no{kind,priority}
//	refresher_models{kind,priority,state}  (state: total, due, late, running, failing, disabled, paused)
//	refresher_models_estimated{kind,priority,state}
//	                                       (1 when refresher_models of the state is the database's estimate:
//	                                       models.Counts.TotalEstimated, Counts.Estimated; else 0)
//	refresher_list_length{kind,list}       (list: input, output, dead)
//	refresher_kind_paused{kind}            (1 while an operator pauses the whole kind, else 0)
//	refresher_backlog{kind,level}          (due rows by priority level, models.Inspector.Backlog)
//	refresher_oldest_due_age_by_level_seconds{kind,level}, refresher_max_attempt_no_by_level{kind,level}
//	                                       (the alert gauges by the rows' priority level,
//	                                       models.Inspector.AlertsByLevel)
//	refresher_priority_alert_max_attempts{priority,level}, refresher_priority_alert_max_age_seconds{priority,level}
//	                                       (the configured thresholds, constant)
//
// state="paused" counts the models an operator paused
// (redisio.Lists.PausedModels); a paused model is also counted in the
// states its row is in.
// A paused kind does not change the counts: its rows stay due, late or
// failing as they are, and refresher_kind_paused says why nothing moves.
// Every series of every kind exists from NewGauges on, at 0 until the first
// count, so that alerts and absent() see them from the start.
//
// Computing them costs the Inspector's counts, so one instance computes a
// kind's per Interval: each instance tries the kind's Redis lock of the
// period (redisio.LockGauges); the winner counts and stores the kind's
// snapshot in Redis, and every instance sets its gauges from the latest
// snapshot. The winner also samples the kind's due count, oldest due age
// and pause into its stats for the dashboard's charts
// (redisio.StatsSample), in the same round trip. Several instances therefore cost one count per kind and
// Interval and all report the same values. The lock and the snapshot
// derive from the kind's lists (redisio.Lists.GaugeLock and GaugeSnapshot),
// so deployments that share a Redis never report each other's counts. The
// winner takes the kind's rows by state and by level from its Counter,
// which gives the dashboard's count when it is at most GaugeShareAge old.
// The counts run in their own goroutine, never in the refresh loops.
type Gauges struct {
	cfg GaugeConfig
	// kindLists are the lists of cfg.Kinds, in order.
	kindLists                                              []redisio.Lists
	oldest, maxAttempt, models, lists, kindPaused, backlog *prometheus.GaugeVec
	// estimated is 1 for the states of models that are estimates.
	estimated *prometheus.GaugeVec
	// levelOldest and levelMaxAttempt are oldest and maxAttempt by the
	// rows' priority level: what the alerts by priority compare with the
	// thresholds of the level (refresher_priority_alert_*{level}).
	levelOldest, levelMaxAttempt *prometheus.GaugeVec
}

// gaugeStates are the values of refresher_models' state label.
var gaugeStates = []string{"total", "due", "late", "running", "failing", "disabled", "paused"}

// gaugeLists are the values of refresher_list_length's list label, in the
// order of gaugeKindValue.Lists.
var gaugeLists = []string{"input", "output", "dead"}

// NewGauges registers the gauges on reg.
func NewGauges(reg prometheus.Registerer, cfg GaugeConfig) *Gauges {
	cfg.Interval = cmp.Or(cfg.Interval, DefaultGaugeInterval)
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Counter == nil {
		cfg.Counter = NewCounter()
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "refresher", Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	g := &Gauges{
		cfg:        cfg,
		oldest:     gauge("oldest_due_age_seconds", "Age of the oldest due row (now - refresh_at); 0 when none is due.", "kind", "priority"),
		maxAttempt: gauge("max_attempt_no", "Highest refresh_attempt_no of the kind's rows.", "kind", "priority"),
		models:     gauge("models", "Rows by state (a row counts in every state it is in; paused: models an operator paused).", "kind", "priority", "state"),
		estimated: gauge("models_estimated", fmt.Sprintf("1 when refresher_models of the state is the database's estimate rather than a count "+
			"(on a table of more than %d rows: the total, and a state above %d), else 0.", models.ExactTotalUpTo, models.ExactStateUpTo), "kind", "priority", "state"),
		lists:      gauge("list_length", "Length of the kind's Redis lists.", "kind", "list"),
		kindPaused: gauge("kind_paused", "1 while an operator pauses the whole kind (nothing is dispatched), else 0.", "kind"),
		backlog:    gauge("backlog", "Due rows by priority level (a row triggered at a one-shot priority counts at both levels until claimed).", "kind", "level"),
		levelOldest: gauge("oldest_due_age_by_level_seconds", "Age of the oldest due row of each priority level (now - refresh_at); 0 when none is due. "+
			"A row's level is its refresh_priority, else the kind's; a row triggered at a one-shot priority counts at both levels until claimed.", "kind", "level"),
		levelMaxAttempt: gauge("max_attempt_no_by_level", "Highest refresh_attempt_no of the rows of each priority level (as for oldest_due_age_by_level_seconds).", "kind", "level"),
	}
	maxAttempts := gauge("priority_alert_max_attempts", "The refresh_attempt_no at which a kind of this priority alerts (priorities: in the config).", "priority", "level")
	maxAge := gauge("priority_alert_max_age_seconds", "The age of the oldest due row at which a kind of this priority alerts (priorities: in the config).", "priority", "level")
	for _, p := range cfg.Priorities {
		level := strconv.Itoa(p.Level)
		maxAttempts.WithLabelValues(p.Name, level).Set(float64(p.MaxAttempts))
		maxAge.WithLabelValues(p.Name, level).Set(p.MaxAge.Seconds())
	}
	for _, k := range cfg.Kinds {
		g.kindLists = append(g.kindLists, k.Lists)
		g.apply(gaugeKindValue{Name: k.Name, Priority: k.Priority, Levels: []models.LevelAlert{{Level: k.Table.Priority}}})
	}
	return g
}

// gaugeKindValue is what one instance counted of a kind, shared through
// Redis (the kind's snapshot).
type gaugeKindValue struct {
	At             time.Time
	Name, Priority string
	Counts         models.Counts
	OldestAge      float64
	Lists          [3]int64 // input, output, dead
	// Paused is the number of paused models; KindPaused whether the whole
	// kind is paused (a snapshot of an older version has neither: 0).
	Paused     int64
	KindPaused bool
	// Backlog are the due rows by priority level.
	Backlog []models.LevelCount `json:",omitempty"`
	// Levels are the oldest due row and highest attempt of each priority
	// level (a snapshot of an older version has none: the level gauges
	// keep their values).
	Levels []models.LevelAlert `json:",omitempty"`
}

// Run updates the gauges every Interval until ctx ends. Each tick tries
// the locks of the period after the last one it tried, or of the period
// of now when that is later (redisio.GaugePeriod): a tick delayed into the
// next period, or a next tick come early, never tries its own period again,
// so an instance alone counts at every tick.
func (g *Gauges) Run(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	last := int64(math.MinInt64)
	for {
		last = max(g.period(g.cfg.Clock.Now()), last+1)
		if _, err := g.tick(ctx, last); err != nil && ctx.Err() == nil {
			g.cfg.Logger.Warn("alert gauges not updated", "err", err)
		}
		if !sleepOrWake(ctx, forever, t.C) {
			return
		}
	}
}

// period returns the gauges' period that holds at.
func (g *Gauges) period(at time.Time) int64 { return redisio.GaugePeriod(at, g.cfg.Interval) }

// gaugeLockPeriods is how many periods a kind's gauge lock lives: past the
// period it names, so that an instance whose clock is behind, whose tick
// names that period late, finds it held rather than counting it again.
const gaugeLockPeriods = 2

// Tick counts the kinds whose lock of the period of now this instance
// wins, and sets the gauges of the others from their shared snapshots;
// computed says whether it counted any. One instance counts a kind per
// period (an Interval of the Unix time), whichever instances tick in it. A
// kind whose count fails keeps the last snapshot; the error is returned.
func (g *Gauges) Tick(ctx context.Context) (computed bool, err error) {
	return g.tick(ctx, g.period(g.cfg.Clock.Now()))
}

// tick is Tick for the period period.
func (g *Gauges) tick(ctx context.Context, period int64) (computed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Interval)
	defer cancel()
	now := g.cfg.Clock.Now()
	won, err := g.cfg.Redis.LockGauges(ctx, g.kindLists, period, now.Format(time.RFC3339Nano), gaugeLockPeriods*g.cfg.Interval)
	if err != nil {
		return false, err
	}
	values := make([]*gaugeKindValue, len(g.cfg.Kinds))
	put := make([][]byte, len(g.cfg.Kinds))
	samples := make([]redisio.StatsSample, len(g.cfg.Kinds))
	var errs []error
	for i, k := range g.cfg.Kinds {
		if !won[i] {
			continue
		}
		computed = true
		v, err := g.count(ctx, k, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		values[i] = &v
		put[i], _ = json.Marshal(v)
		samples[i] = redisio.StatsSample{At: now, Backlog: v.Counts.Due, LatenessSeconds: int64(v.OldestAge), Paused: v.KindPaused}
	}
	got, err := g.cfg.Redis.ShareGauges(ctx, g.kindLists, put, samples, 4*g.cfg.Interval)
	if err != nil {
		return computed, errors.Join(append(errs, err)...)
	}
	for i, k := range g.cfg.Kinds {
		v := values[i]
		if v == nil && got[i] != nil {
			v = &gaugeKindValue{}
			if err := json.Unmarshal(got[i], v); err != nil {
				errs = append(errs, fmt.Errorf("gauges of kind %s: %w", k.Name, err))
				continue
			}
		}
		if v != nil { // nil: the winner has not counted yet
			v.Name, v.Priority = k.Name, k.Priority
			g.apply(*v)
		}
	}
	return computed, errors.Join(errs...)
}

// count computes the gauges of kind k at now: from the kind's count the
// Counter has, when it is at most GaugeShareAge old, else from a new one;
// v.At is when the rows were counted, and the ages are as of then.
func (g *Gauges) count(ctx context.Context, k GaugeKind, now time.Time) (gaugeKindValue, error) {
	v := gaugeKindValue{At: now, Name: k.Name, Priority: k.Priority}
	in := k.Inspector
	if in == nil {
		in = g.cfg.Inspector
	}
	if in == nil {
		return v, fmt.Errorf("gauges of kind %s: no Inspector (set GaugeKind.Inspector or GaugeConfig.Inspector)", k.Name)
	}
	kc, err := g.cfg.Counter.Count(ctx, CountedKind{Name: k.Name, Table: k.Table, LateAfter: k.LateAfter, Inspector: in},
		now, GaugeShareAge(g.cfg.Interval))
	if err != nil {
		return v, err
	}
	c := kc.Counts
	v.At, v.Counts, v.Backlog = kc.At, c, kc.Backlog
	if v.Levels, err = in.AlertsByLevel(ctx, k.Table, v.At); err != nil {
		return v, err
	}
	if !c.OldestDue.IsZero() {
		v.OldestAge = max(0, v.At.Sub(c.OldestDue).Seconds())
	}
	st, err := g.cfg.Redis.ReadListState(ctx, k.Lists)
	if err != nil {
		return v, err
	}
	v.Lists = [3]int64{st.Input, st.Output, st.Dead}
	v.Paused, v.KindPaused = st.PausedModels, st.KindPause != nil
	return v, nil
}

// apply sets the gauges of one kind from v.
func (g *Gauges) apply(v gaugeKindValue) {
	c := v.Counts
	g.oldest.WithLabelValues(v.Name, v.Priority).Set(v.OldestAge)
	g.maxAttempt.WithLabelValues(v.Name, v.Priority).Set(float64(c.MaxAttemptNo))
	for i, n := range []int64{c.Total, c.Due, c.Late, c.Running, c.Failing, c.Disabled, v.Paused} {
		g.models.WithLabelValues(v.Name, v.Priority, gaugeStates[i]).Set(float64(n))
	}
	for i, state := range []models.RowState{models.StateAll, models.StateDue, models.StateLate, models.StateRunning, models.StateFailing, models.StateDisabled} {
		estimated := 0.0
		if c.IsEstimated(state) {
			estimated = 1
		}
		g.estimated.WithLabelValues(v.Name, v.Priority, gaugeStates[i]).Set(estimated)
	}
	for i, list := range gaugeLists {
		g.lists.WithLabelValues(v.Name, list).Set(float64(v.Lists[i]))
	}
	kindPaused := 0.0
	if v.KindPaused {
		kindPaused = 1
	}
	g.kindPaused.WithLabelValues(v.Name).Set(kindPaused)
	// Levels come and go: the kind's series are replaced as a whole.
	g.backlog.DeletePartialMatch(prometheus.Labels{"kind": v.Name})
	for _, l := range v.Backlog {
		g.backlog.WithLabelValues(v.Name, strconv.Itoa(l.Level)).Set(float64(l.Due))
	}
	if v.Levels != nil {
		g.levelOldest.DeletePartialMatch(prometheus.Labels{"kind": v.Name})
		g.levelMaxAttempt.DeletePartialMatch(prometheus.Labels{"kind": v.Name})
	}
	for _, l := range v.Levels {
		level, age := strconv.Itoa(l.Level), 0.0
		if !l.OldestDue.IsZero() {
			age = max(0, v.At.Sub(l.OldestDue).Seconds())
		}
		g.levelOldest.WithLabelValues(v.Name, level).Set(age)
		g.levelMaxAttempt.WithLabelValues(v.Name, level).Set(float64(l.MaxAttemptNo))
	}
}
