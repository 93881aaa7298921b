package main

import (
	"fmt"
	"strings"
	"time"
)

// timeline is when a run's results were applied (--timeline): the time
// since the start at which each tenth of the run's models had its next
// refresh_at, and the longest wait between two applied batches. Two runs
// of equal wall time can differ in where they lost it: a slow start, a
// stall in the middle (a checkpoint, a page flush), a long tail.
type timeline struct {
	total   int64
	applied int64
	tenths  []time.Duration // tenths[i]: when i tenths had been applied
	last    time.Duration
	gap     time.Duration // the longest time between two applied batches
	gapAt   time.Duration // when it began
}

func newTimeline(total int64) *timeline { return &timeline{total: total} }

// add records n more models applied at, since the run's start.
func (t *timeline) add(at time.Duration, n int64) {
	if at-t.last > t.gap {
		t.gap, t.gapAt = at-t.last, t.last
	}
	t.last = at
	t.applied += n
	for len(t.tenths) <= 10 && t.applied*10 >= int64(len(t.tenths))*t.total {
		t.tenths = append(t.tenths, at)
	}
}

func (t *timeline) String() string {
	var b strings.Builder
	for i, at := range t.tenths {
		if i > 0 {
			fmt.Fprintf(&b, " %d%% %s", i*10, at.Round(10*time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "; longest wait between batches %s, after %s", t.gap.Round(time.Millisecond), t.gapAt.Round(time.Millisecond))
	return b.String()
}
