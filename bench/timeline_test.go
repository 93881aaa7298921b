package main

import (
	"testing"
	"time"
)

func TestTimeline(t *testing.T) {
	tl := newTimeline(1000)
	ms := time.Millisecond
	tl.add(50*ms, 100)  // 10%
	tl.add(60*ms, 250)  // 35%: 20% and 30% reached here
	tl.add(300*ms, 650) // 100%
	want := " 10% 50ms 20% 60ms 30% 60ms 40% 300ms 50% 300ms 60% 300ms 70% 300ms 80% 300ms 90% 300ms 100% 300ms;" +
		" longest wait between batches 240ms, after 60ms"
	if got := tl.String(); got != want {
		t.Errorf("timeline:\n got %q\nwant %q", got, want)
	}
}
