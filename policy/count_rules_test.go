package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/schedule"
)

// TestApplyCountRules: a success applied to rows whose own rules use COUNT
// over centuries plans their next occurrence (these rows used to be left
// with refresh_at NULL and no reason, as if their rule had ended), and a
// COUNT the engine cannot count quickly disables the row with the reason.
func TestApplyCountRules(t *testing.T) {
	t.Parallel()
	p := Policy{Kind: "feeds", Timeout: time.Hour}
	const uid = "d0attempt00000000000"
	started := at("2026-11-25T23:30:00Z")
	now := at("2026-11-26T00:00:00Z")
	running := State{RefreshAt: started.Add(time.Hour), AttemptUID: uid, AttemptAt: started, AttemptNo: 1,
		TimeoutAt: started.Add(time.Hour)}
	success := Result{AttemptUID: uid, Type: ResultSuccess}
	for _, c := range []struct {
		rule string
		want State
	}{
		{
			rule: "DTSTART:19000101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYHOUR=23;BYMINUTE=59;BYSECOND=59;COUNT=100000",
			want: State{RefreshAt: at("2026-11-28T23:59:59Z"), AttemptAt: started, LastSuccessAt: now},
		},
		{
			rule: "DTSTART:19200101T000000Z\nRRULE:FREQ=HOURLY;COUNT=5000;BYMONTH=2;BYMONTHDAY=29",
			want: State{RefreshAt: at("2028-02-29T00:00:00Z"), AttemptAt: started, LastSuccessAt: now},
		},
		{
			rule: "DTSTART:19000101T000000Z\nRRULE:FREQ=MONTHLY;COUNT=100000;BYMONTHDAY=1,2,3,4,5,6,7,8,9,10",
			want: State{AttemptAt: started, AttemptNo: 1, DisabledAt: now,
				DisabledReason: "Invalid refresh schedule: COUNT=100000: evaluating it means walking more than 10000 occurrences of this rule, which is too slow to do for every row; use UNTIL instead of COUNT, or a COUNT of at most 10000",
				LastError:      "Invalid refresh schedule: COUNT=100000: evaluating it means walking more than 10000 occurrences of this rule, which is too slow to do for every row; use UNTIL instead of COUNT, or a COUNT of at most 10000"},
		},
	} {
		s, err := schedule.Parse(c.rule)
		var sched Nexter
		if err == nil {
			sched = s
		}
		got, _ := p.Apply(running, success, now, sched, err, 0)
		require.Equal(t, c.want, got, c.rule)
	}
}
