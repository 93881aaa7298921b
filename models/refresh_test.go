package models

import (
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

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
