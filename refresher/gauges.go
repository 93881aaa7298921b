package refresher

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

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
	// Priority labels the kind's gauges (free text, "" allowed).
	Priority string
}

// GaugeConfig configures Gauges.
type GaugeConfig struct {
	Kinds     []GaugeKind
	Inspector models.Inspector
	Redis     redis.UniversalClient
	// Interval is how often the gauges are computed, by all instances
	// together: one instance counts once per Interval (at most every 0.9
	// Interval, see Tick). Default 15s.
	Interval time.Duration
	// KeyPrefix starts the Redis keys of the lock and the shared snapshot.
	// Default "refresher:gauges:".
	KeyPrefix string
	Clock     Clock
	Logger    *slog.Logger
}

// Gauges are the alert gauges of seed 004 (max age and max attempts, by
// priority) and the counts behind them:
//
//	refresher_oldest_due_age_seconds{kind,priority}
//	refresher_max_attempt_no{kind,priority}
//	refresher_models{kind,priority,state}  (state: total, due, late, running, failing, disabled, paused)
//	refresher_list_length{kind,list}       (list: input, output, dead)
//	refresher_kind_paused{kind}            (1 while an operator pauses the whole kind, else 0)
//
// state="paused" counts the models an operator paused (the hash of
// PauseKeys); a paused model is also counted in the states its row is in.
// A paused kind does not change the counts: its rows stay due, late or
// failing as they are, and refresher_kind_paused says why nothing moves.
// Every series of every kind exists from NewGauges on, at 0 until the first
// count, so that alerts and absent() see them from the start.
//
// Computing them costs the Inspector's counts, so one instance computes
// them per Interval: each instance tries a Redis lock (SET NX, with a TTL
// of 0.9 Interval); the winner counts and stores a snapshot in Redis, and
// every instance sets its gauges from the latest snapshot. Several instances
// therefore cost one count per Interval and all report the same values. The
// counts run in their own goroutine, never in the refresh loops.
type Gauges struct {
	cfg                                           GaugeConfig
	oldest, maxAttempt, models, lists, kindPaused *prometheus.GaugeVec
}

// gaugeStates are the values of refresher_models' state label.
var gaugeStates = []string{"total", "due", "late", "running", "failing", "disabled", "paused"}

// gaugeLists are the values of refresher_list_length's list label, in the
// order of gaugeKindValue.Lists.
var gaugeLists = []string{"input", "output", "dead"}

// NewGauges registers the gauges on reg.
func NewGauges(reg prometheus.Registerer, cfg GaugeConfig) *Gauges {
	cfg.Interval = cmp.Or(cfg.Interval, DefaultGaugeInterval)
	cfg.KeyPrefix = cmp.Or(cfg.KeyPrefix, "refresher:gauges:")
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
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
		lists:      gauge("list_length", "Length of the kind's Redis lists.", "kind", "list"),
		kindPaused: gauge("kind_paused", "1 while an operator pauses the whole kind (nothing is dispatched), else 0.", "kind"),
	}
	for _, k := range cfg.Kinds {
		g.apply(gaugeSnapshot{Kinds: []gaugeKindValue{{Name: k.Name, Priority: k.Priority}}})
	}
	return g
}

// gaugeSnapshot is what one instance computed, shared through Redis.
type gaugeSnapshot struct {
	At    time.Time        `json:"at"`
	Kinds []gaugeKindValue `json:"kinds"`
}

type gaugeKindValue struct {
	Name, Priority string
	Counts         models.Counts
	OldestAge      float64
	Lists          [3]int64 // input, output, dead
	// Paused is the number of paused models; KindPaused whether the whole
	// kind is paused (a snapshot of an older version has neither: 0).
	Paused     int64
	KindPaused bool
}

// Run updates the gauges every Interval until ctx ends.
func (g *Gauges) Run(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := g.Tick(ctx); err != nil && ctx.Err() == nil {
			g.cfg.Logger.Warn("alert gauges not updated", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick computes the gauges when this instance wins the lock, and otherwise
// sets them from the shared snapshot; computed says which. The lock lives
// 0.9 Interval: it is set a little after each tick, so a lock of a whole
// Interval was often still held at the next tick, and a lone instance
// counted only every other tick.
func (g *Gauges) Tick(ctx context.Context) (computed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Interval)
	defer cancel()
	ttl := g.cfg.Interval - g.cfg.Interval/10
	won, err := g.cfg.Redis.SetNX(ctx, g.cfg.KeyPrefix+"lock", g.cfg.Clock.Now().Format(time.RFC3339Nano), ttl).Result()
	if err != nil {
		return false, err
	}
	var snap gaugeSnapshot
	if won {
		if snap, err = g.compute(ctx); err != nil {
			return true, err
		}
		data, _ := json.Marshal(snap)
		if err := g.cfg.Redis.Set(ctx, g.cfg.KeyPrefix+"snapshot", data, 4*g.cfg.Interval).Err(); err != nil {
			return true, err
		}
	} else {
		data, err := g.cfg.Redis.Get(ctx, g.cfg.KeyPrefix+"snapshot").Bytes()
		if errors.Is(err, redis.Nil) {
			return false, nil // the winner has not finished yet
		}
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(data, &snap); err != nil {
			return false, err
		}
	}
	g.apply(snap)
	return won, nil
}

func (g *Gauges) compute(ctx context.Context) (gaugeSnapshot, error) {
	now := g.cfg.Clock.Now()
	snap := gaugeSnapshot{At: now}
	var errs []error
	for _, k := range g.cfg.Kinds {
		v := gaugeKindValue{Name: k.Name, Priority: k.Priority}
		c, err := g.cfg.Inspector.Counts(ctx, k.Table, now, cmp.Or(k.LateAfter, models.DefaultLateAfter))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v.Counts = c
		if !c.OldestDue.IsZero() {
			v.OldestAge = max(0, now.Sub(c.OldestDue).Seconds())
		}
		kindKey, hash := PauseKeys(k.Lists)
		p := g.cfg.Redis.Pipeline()
		cmds := [3]*redis.IntCmd{p.LLen(ctx, k.Lists.Input), p.LLen(ctx, k.Lists.Output), p.LLen(ctx, k.Lists.Dead)}
		paused, kindPaused := p.HLen(ctx, hash), p.Exists(ctx, kindKey)
		if _, err := p.Exec(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		for i, c := range cmds {
			v.Lists[i] = c.Val()
		}
		v.Paused, v.KindPaused = paused.Val(), kindPaused.Val() > 0
		snap.Kinds = append(snap.Kinds, v)
	}
	return snap, errors.Join(errs...)
}

// apply sets the gauges from snap.
func (g *Gauges) apply(snap gaugeSnapshot) {
	for _, v := range snap.Kinds {
		c := v.Counts
		g.oldest.WithLabelValues(v.Name, v.Priority).Set(v.OldestAge)
		g.maxAttempt.WithLabelValues(v.Name, v.Priority).Set(float64(c.MaxAttemptNo))
		for i, n := range []int64{c.Total, c.Due, c.Late, c.Running, c.Failing, c.Disabled, v.Paused} {
			g.models.WithLabelValues(v.Name, v.Priority, gaugeStates[i]).Set(float64(n))
		}
		for i, list := range gaugeLists {
			g.lists.WithLabelValues(v.Name, list).Set(float64(v.Lists[i]))
		}
		kindPaused := 0.0
		if v.KindPaused {
			kindPaused = 1
		}
		g.kindPaused.WithLabelValues(v.Name).Set(kindPaused)
	}
}
