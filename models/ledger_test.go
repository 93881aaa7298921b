package models

import (
	"reflect"
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

// TestLedgerDetailRoundTrip: what AppendLedgerDetail writes, LedgerEntry
// reads back, texts that need escaping and invalid UTF-8 included; an
// entry without detail is NULL.
func TestLedgerDetailRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456000, time.UTC)
	prio := -3
	for _, e := range []policy.Entry{
		{Attempt: "d4ks0m2h7ctg01q7vb1g", Planned: at},
		{Attempt: "a", Planned: at, Next: at.Add(time.Hour), Bound: policy.BoundIncidentFloor, Until: at.Add(time.Minute),
			Reason: "say \"no\"\\ \x01\n✓", Disabled: true, Priority: &prio, By: "alice", Note: "ü", Group: "api-a"},
		{Priority: &prio},
		{Attempt: "d4ks0m2h7ctg01q7vb1g", Next: at.Add(time.Hour), Dispatched: at.Add(-time.Minute)},
	} {
		e.At, e.Kind, e.Key, e.Event = at, "k", "1", policy.EventFailed
		detail := AppendLedgerDetail(nil, e)
		got, err := LedgerEntry("k", "1", Micros(at), string(policy.EventFailed), detail)
		if err != nil {
			t.Fatalf("%s: %v", detail, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%s\n got %#v\nwant %#v", detail, got, e)
		}
	}
	if d := AppendLedgerDetail(nil, policy.Entry{At: at, Event: policy.EventPaused}); len(d) != 0 {
		t.Fatalf("no detail: %q, want none", d)
	}
	bad, _ := LedgerEntry("k", "1", 0, "x", AppendLedgerDetail(nil, policy.Entry{Reason: "a\xffb"}))
	if bad.Reason != "a\uFFFDb" {
		t.Fatalf("invalid UTF-8 is mended: %q", bad.Reason)
	}
}
