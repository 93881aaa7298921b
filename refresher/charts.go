package refresher

import (
	"context"
	"time"

	"github.com/refresher/refresher/redisio"
)

// Span is what a chart of the dashboard covers: N steps of Step, the last
// one the step of now.
type Span struct {
	Name string
	Step time.Duration
	N    int
}

// The dashboard's spans: the last hour by minute (redisio.Lists.StatsMinute,
// 60 hashes a kind) and the last day by ten minutes (Lists.StatsTen, 144).
var (
	LastHour = Span{Name: "hour", Step: time.Minute, N: 60}
	LastDay  = Span{Name: "day", Step: 10 * time.Minute, N: 144}
)

// Activity is what a kind did (or several kinds together, SumActivity) over
// a span: Points[i] is the step starting at Start + i*Span.Step.
type Activity struct {
	Span   Span
	Start  time.Time
	Points []redisio.StatsPoint
}

// Activity reads the activity of each kind of lists over span ending at now,
// in one round trip (see redisio.ReadStats).
func (a *Admin) Activity(ctx context.Context, lists []redisio.Lists, span Span, now time.Time) ([]Activity, error) {
	step := int64(span.Step / time.Second)
	last := now.Unix() / step
	first := last - int64(span.N) + 1
	points, err := a.rdb.ReadStats(ctx, lists, span.Step != time.Minute, first, span.N)
	if err != nil {
		return nil, err
	}
	out := make([]Activity, len(lists))
	for i := range lists {
		out[i] = Activity{Span: span, Start: time.Unix(first*step, 0).UTC(), Points: points[i]}
	}
	return out, nil
}

// SumActivity adds up kinds' activities over one span, for the overview:
// counts and backlogs add, the lateness is the highest, and a step is
// marked paused or in an incident when any kind was.
func SumActivity(span Span, acts []Activity) Activity {
	sum := Activity{Span: span, Points: make([]redisio.StatsPoint, span.N)}
	for _, a := range acts {
		sum.Start = a.Start
		for i, p := range a.Points {
			s := &sum.Points[i]
			s.Dispatched += p.Dispatched
			s.Applied += p.Applied
			s.Failed += p.Failed
			s.Dead += p.Dead
			s.Backlog += p.Backlog
			s.LatenessSeconds = max(s.LatenessSeconds, p.LatenessSeconds)
			s.Paused = s.Paused || p.Paused
			s.Incident = s.Incident || p.Incident
		}
	}
	return sum
}
