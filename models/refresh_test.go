package models_test

import (
	. "github.com/refresher/refresher/models"
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

// The application's Enable (GORM) and the service's (`refresher enable`)
// are one transition, column for column.
func TestRefreshEnableIsPolicyEnable(t *testing.T) {
	t.Parallel()
	berlin := time.FixedZone("CET", 3600)
	now := base.Add(time.Hour).In(berlin)
	for _, st := range []policy.State{{}, fullState(1), fullState(2), {AttemptUID: "d0attempt00000000000", TimeoutAt: base, RefreshAt: base}} {
		var r Refresh
		r.SetState(st)
		r.Enable(now)
		eq(t, r.State(), policy.Enable(st, now.UTC()))
		eq(t, r.RefreshTimeoutAt == nil && r.RefreshAttemptUID == nil, true, "running attempt cleared")
		eq(t, r.RefreshAt.Location(), time.UTC, "stored in UTC")
	}
}

func TestRefreshState(t *testing.T) {
	t.Parallel()
	for _, st := range []policy.State{{}, fullState(1), {AttemptNo: 2, Status: "x", TimeoutAt: base}} {
		var r Refresh
		r.SetState(st)
		eq(t, r.State(), st)
	}
	var r Refresh
	r.SetState(policy.State{LastError: "e"})
	eq(t, r.RefreshAt == nil && r.RefreshAttemptUID == nil && r.RefreshStatus == nil, true, "zero values become NULL")
	eq(t, *r.RefreshLastError, "e")

	berlin := time.FixedZone("CET", 3600)
	r.SetState(policy.State{RefreshAt: base.In(berlin)})
	eq(t, r.RefreshAt.Location(), time.UTC, "stored in UTC")
}
