package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/refresher"
)

// What the model page and the overview show of a kind's throttle holds and
// incident guard (docs/schedules.md, docs/operating.md). Both live in
// Redis and are read, never changed, here.

// ThrottleHold is a model's throttle group while it is held: until then
// the dispatcher starts none of the group's rows, and a row of the group
// that falls due waits for the hold's end without counting an attempt.
type ThrottleHold struct {
	// Group is the value of the kind's throttle_group column in the row.
	Group string `json:"group"`
	// Until is the hold's end (the service's clock, UTC).
	Until time.Time `json:"until"`
}

// throttleHold returns the hold of row's group at now; nil when the kind
// names no throttle_group, the row has no group, or its group is not held.
// row's Payload must hold the kind's throttle_group column.
func (s *Server) throttleHold(ctx context.Context, k *Kind, row models.Row, now time.Time) (*ThrottleHold, error) {
	g := refresher.ThrottleGroupOf(row, k.ThrottleGroup)
	if g == "" {
		return nil, nil
	}
	holds, err := s.admin(k).ThrottleHolds(ctx, k.Lists, now)
	if err != nil {
		return nil, err
	}
	until, ok := holds[g]
	if !ok {
		return nil, nil
	}
	return &ThrottleHold{Group: g, Until: until.UTC()}, nil
}

// throttleSummary says in words what a held group means for the model
// (state st): a row planned before the hold's end (or due) starts at its
// end at the earliest, and the wait does not count; a row planned later
// is not affected.
func throttleSummary(h *ThrottleHold, st policy.State, now time.Time) string {
	if !st.RefreshAt.IsZero() && st.RefreshAt.After(h.Until) {
		return fmt.Sprintf("its throttle group %s is held until %s, before its next refresh", h.Group, clock(h.Until, now))
	}
	return fmt.Sprintf("held with its throttle group %s until %s after a Retry-After: it does not start before then, and the wait is not counted as an attempt",
		h.Group, clock(h.Until, now))
}

// incidentSummary says in words what an incident of the kind means for its
// models.
func incidentSummary(inc *refresher.IncidentState) string {
	why := fmt.Sprintf("%d of %d results failed in the last %s", inc.Failures, inc.Results,
		policy.FormatDuration(time.Duration(inc.WindowSeconds)*time.Second))
	if inc.Worker {
		why = "a worker reported it"
	}
	return "the kind is in an incident (" + why + "): failures do not count and disable nobody"
}

// kindIncident reads the kind's incident guard at now; nil when there is no
// incident.
func (s *Server) kindIncident(ctx context.Context, k *Kind, now time.Time) (*refresher.IncidentState, error) {
	inc, err := s.admin(k).KindIncident(ctx, k.Lists, k.Policy.Guard, now)
	if err != nil || !inc.Active {
		return nil, err
	}
	return &inc, nil
}

// kindGuards reads, for the overview, the kind's incident (nil when there
// is none) and how many of its throttle groups are held at now (0 when the
// kind names no throttle_group: no row is held then, as the dispatcher and
// refresher_throttled_groups count).
func (s *Server) kindGuards(ctx context.Context, k *Kind, now time.Time) (*refresher.IncidentState, int, error) {
	inc, err := s.kindIncident(ctx, k, now)
	if err != nil || k.ThrottleGroup == "" {
		return inc, 0, err
	}
	holds, err := s.admin(k).ThrottleHolds(ctx, k.Lists, now)
	if err != nil {
		return inc, 0, err
	}
	return inc, len(holds), nil
}
