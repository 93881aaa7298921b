package refresher

import (
	"context"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// The operator's read of a kind's throttle holds and incident guard
// (docs/schedules.md, docs/operating.md), from the same Redis keys the
// dispatcher and the poller use (throttle.go, incident.go). Reading changes
// nothing.

// ThrottleHolds returns the throttle groups of the kind with lists l held
// after now (the service's clock), with the end of each hold; none when no
// group is held.
func (a *Admin) ThrottleHolds(ctx context.Context, l redisio.Lists, now time.Time) (map[string]time.Time, error) {
	return a.rdb.Held(ctx, l.Throttle(), now)
}

// ThrottleGroupOf returns the throttle group of row, whose Payload holds
// the kind's throttle_group column: its value as the job carries it and a
// worker sends it back in throttle_key (text as it is, numbers in decimal);
// "" when the column is "" or its value NULL.
func ThrottleGroupOf(row models.Row, column string) string {
	if column == "" {
		return ""
	}
	return groupOf(row.Payload.Get(column))
}

// IncidentState is a kind's incident guard as its window in Redis stands.
type IncidentState struct {
	// Active: the kind is in an incident (policy.Guard.Incident of the
	// window): failures do not count and disable nobody.
	Active bool `json:"active"`
	// Results and Failures are the window's counts; Worker is set when a
	// result with "scope":"worker" came within it.
	Results  int  `json:"results"`
	Failures int  `json:"failures"`
	Worker   bool `json:"worker"`
	// WindowSeconds is the guard's window.
	WindowSeconds float64 `json:"window_seconds"`
}

// KindIncident reads the incident window of the kind with lists l at now
// (the service's clock) and decides with g, as the poller does before each
// batch (without the batch in hand). A guard that is off reads nothing and
// reports no incident.
func (a *Admin) KindIncident(ctx context.Context, l redisio.Lists, g policy.Guard, now time.Time) (IncidentState, error) {
	g = g.WithDefaults()
	st := IncidentState{WindowSeconds: g.Window.Seconds()}
	if g.Off {
		return st, nil
	}
	results, failures, worker, err := a.rdb.Counts(ctx, incidentBuckets(l, g.Window, now), l.IncidentWorker())
	if err != nil {
		return st, err
	}
	w := policy.Window{Results: results, Failures: failures, Worker: worker}
	st.Active, st.Results, st.Failures, st.Worker = g.Incident(w), results, failures, worker
	return st, nil
}
