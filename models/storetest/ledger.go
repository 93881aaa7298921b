package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// ledgerOf returns env's store as a models.LedgerStore, after migrate
// created its table.
func ledgerOf(t *testing.T, env Env) models.LedgerStore {
	t.Helper()
	items(t, env, KeyString) // migrate creates the ledger too
	ls, ok := env.Store.(models.LedgerStore)
	if !ok {
		t.Fatalf("%T keeps no ledger (models.LedgerStore)", env.Store)
	}
	must(t, ls.LedgerReady(context.Background()))
	return ls
}

// appendTx appends entries in a transaction of env's store.
func appendTx(t *testing.T, env Env, entries ...policy.Entry) {
	t.Helper()
	must(t, env.Store.Tx(context.Background(), func(tx models.Tx) error {
		lt, ok := tx.(models.LedgerTx)
		if !ok {
			return fmt.Errorf("%T records no ledger (models.LedgerTx)", tx)
		}
		return lt.AppendLedger(context.Background(), entries)
	}))
}

func testLedgerRoundTrip(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	ls := ledgerOf(t, env)
	prio := 2
	at := base.Add(time.Hour)
	full := policy.Entry{At: at, Kind: "items", Key: "42", Event: policy.EventFailed, Attempt: "a1",
		Planned: base.Add(time.Minute), Next: base.Add(2 * time.Hour), Bound: policy.BoundRetryAfter,
		Until: base.Add(3 * time.Hour), Reason: "upstream said \"no\" ✓", Disabled: true, Priority: &prio,
		By: "alice", Note: "a note", Group: "g1"}
	appendTx(t, env,
		policy.Entry{At: base, Kind: "items", Key: "42", Event: policy.EventDispatched, Attempt: "a1"},
		full,
		policy.Entry{At: base.Add(30 * time.Minute), Kind: "items", Whole: true, Event: policy.EventPaused, By: "cli", Note: "deploy"},
		policy.Entry{At: base, Kind: "items", Key: "43", Event: policy.EventDispatched},
		policy.Entry{At: base, Kind: "other", Key: "42", Event: policy.EventDispatched},
		policy.Entry{At: base, Kind: "other", Whole: true, Event: policy.EventPaused},
	)
	// Outside a transaction, as the kind's events are written.
	must(t, ls.AppendLedger(ctx, []policy.Entry{{At: base.Add(2 * time.Hour), Kind: "items", Whole: true, Event: policy.EventResumed, By: "cli"}}))

	got, err := ls.Ledger(ctx, "items", "42", time.Time{}, time.Time{}, 100)
	must(t, err)
	var events []policy.Event
	for _, e := range got {
		events = append(events, e.Event)
	}
	eq(t, events, []policy.Event{policy.EventDispatched, policy.EventPaused, policy.EventFailed, policy.EventResumed},
		"the row's entries and the kind's, oldest first")
	eq(t, got[2], full, "every field round trips")
	eq(t, got[0], policy.Entry{At: base, Kind: "items", Key: "42", Event: policy.EventDispatched, Attempt: "a1"}, "zero fields stay zero")

	got, err = ls.Ledger(ctx, "items", "42", base.Add(time.Minute), at, 100)
	must(t, err)
	eq(t, len(got), 2, "from and to bound At, both included")
	eq(t, got[1].Event, policy.EventFailed)
	got, err = ls.Ledger(ctx, "items", "42", time.Time{}, time.Time{}, 1)
	must(t, err)
	eq(t, len(got), 1, "limit")
	got, err = ls.Ledger(ctx, "items", "nothing", time.Time{}, time.Time{}, 100)
	must(t, err)
	eq(t, len(got), 2, "a row without entries still sees its kind's")

	// A key longer than the column and texts a worker made huge are cut,
	// alike when written and read: the entry never fails its batch.
	long := strings.Repeat("k", 300)
	appendTx(t, env, policy.Entry{At: base, Kind: "items", Key: long, Event: policy.EventStale,
		Attempt: strings.Repeat("x", 70000), Reason: strings.Repeat("\x01", 5000), Note: strings.Repeat("ü", 5000)})
	got, err = ls.Ledger(ctx, "items", long, time.Time{}, time.Time{}, 100)
	must(t, err)
	eq(t, len(got), 3, "the long key's entry and the kind's two")
	eq(t, got[0].Key, models.LedgerKey(long), "the key as cut")
	eq(t, len(got[0].Attempt) < 100, true, "the attempt as cut")

	// Many entries: more than one INSERT.
	many := make([]policy.Entry, models.MaxLedgerInsert+5)
	for i := range many {
		many[i] = policy.Entry{At: base.Add(time.Duration(i) * time.Second), Kind: "many", Key: "k", Event: policy.EventSucceeded}
	}
	appendTx(t, env, many...)
	got, err = ls.Ledger(ctx, "many", "k", time.Time{}, time.Time{}, 10000)
	must(t, err)
	eq(t, len(got), len(many), "every entry of a large batch")
}

func testLedgerRollsBack(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	ls := ledgerOf(t, env)
	boom := errors.New("boom")
	err := env.Store.Tx(ctx, func(tx models.Tx) error {
		if err := tx.(models.LedgerTx).AppendLedger(ctx, []policy.Entry{{At: base, Kind: "items", Key: "a", Event: policy.EventDispatched}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want fn's error", err)
	}
	got, err := ls.Ledger(ctx, "items", "a", time.Time{}, time.Time{}, 10)
	must(t, err)
	eq(t, len(got), 0, "a rolled-back transaction leaves no entry")
}

func testLedgerPrune(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	ls := ledgerOf(t, env)
	now := base.Add(100 * 24 * time.Hour)
	var entries []policy.Entry
	// 7 old entries of row "old", then 12 young ones of rows "a" and kind entries.
	for i := range 7 {
		entries = append(entries, policy.Entry{At: now.Add(-40*24*time.Hour + time.Duration(i)*time.Second), Kind: "items", Key: "old", Event: policy.EventSucceeded})
	}
	for i := range 12 {
		entries = append(entries,
			policy.Entry{At: now.Add(time.Duration(i-20) * time.Minute), Kind: "items", Key: "a", Event: policy.EventSucceeded},
			policy.Entry{At: now.Add(time.Duration(i-20) * time.Minute), Kind: "items", Whole: true, Event: policy.EventThrottleHold})
	}
	entries = append(entries, policy.Entry{At: now.Add(-time.Minute), Kind: "items", Key: "b", Event: policy.EventSucceeded})
	for range 7 { // of the same microsecond: still kept to the count exactly
		entries = append(entries, policy.Entry{At: now.Add(-time.Minute), Kind: "items", Key: "tie", Event: policy.EventStale})
	}
	appendTx(t, env, entries...)

	b := models.LedgerBounds{MaxEntries: 5, KindMaxEntries: 8, MaxAge: 30 * 24 * time.Hour, Chunk: 3}
	var from models.LedgerPrune
	total, calls := 0, 0
	for {
		n, next, err := ls.PruneLedger(ctx, b, now, from)
		must(t, err)
		total += n
		calls++
		if calls > 100 {
			t.Fatal("the pruning never ends a round")
		}
		if from.Counting && !next.Counting {
			break // a whole round: age, then every group
		}
		if !from.Counting && n > b.Chunk {
			t.Fatalf("one call removed %d entries, more than the chunk %d (age)", n, b.Chunk)
		}
		from = next
	}
	eq(t, total, 7+(12-5)+(12-8)+(7-5), "removed: the old row's, and the entries beyond the counts")
	count := func(key string) (row, kind int) {
		got, err := ls.Ledger(ctx, "items", key, time.Time{}, time.Time{}, 1000)
		must(t, err)
		for _, e := range got {
			if e.Whole {
				kind++
			} else {
				row++
			}
		}
		return row, kind
	}
	row, kind := count("a")
	eq(t, [2]int{row, kind}, [2]int{5, 8}, "row a keeps its last 5, the kind its last 8")
	got, err := ls.Ledger(ctx, "items", "a", time.Time{}, time.Time{}, 1000)
	must(t, err)
	eq(t, got[len(got)-1].At, now.Add(-9*time.Minute), "the newest are kept")
	row, _ = count("old")
	eq(t, row, 0, "entries older than max_age are gone")
	row, _ = count("b")
	eq(t, row, 1, "a row within its bounds is left alone")
	row, _ = count("tie")
	eq(t, row, 5, "entries of one microsecond")

	n, _, err := ls.PruneLedger(ctx, b, now, models.LedgerPrune{})
	must(t, err)
	eq(t, n, 0, "nothing more to prune")
}

// The read returns the newest entries when more than limit fall in the
// range (the model page and why want the recent past), oldest first.
func testLedgerReadsTheNewest(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	ls := ledgerOf(t, env)
	var es []policy.Entry
	for i := range 10 {
		es = append(es, policy.Entry{At: base.Add(time.Duration(i) * time.Minute), Kind: "items", Key: "k", Event: policy.EventStale})
	}
	appendTx(t, env, es...)
	got, err := ls.Ledger(ctx, "items", "k", time.Time{}, time.Time{}, 3)
	must(t, err)
	eq(t, len(got), 3, "limit")
	eq(t, []time.Time{got[0].At, got[1].At, got[2].At}, []time.Time{es[7].At, es[8].At, es[9].At}, "the newest 3, oldest first")
	got, err = ls.Ledger(ctx, "items", "k", time.Time{}, base.Add(4*time.Minute), 2)
	must(t, err)
	eq(t, []time.Time{got[0].At, got[1].At}, []time.Time{es[3].At, es[4].At}, "the newest up to to")
}

// A row whose key is the empty string, or starts with '!', keeps entries
// of its own, apart from its kind's (Whole) and its kind's routine
// batches: read back as the row's, and bounded as a row's.
func testLedgerOddKeys(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	ls := ledgerOf(t, env)
	var es []policy.Entry
	for i := range 4 {
		at := base.Add(time.Duration(i) * time.Minute)
		es = append(es,
			policy.Entry{At: at, Kind: "items", Key: "", Event: policy.EventStale},
			policy.Entry{At: at, Kind: "items", Key: "!routine", Event: policy.EventStale},
			policy.Entry{At: at, Kind: "items", Key: "!", Event: policy.EventStale},
			policy.Entry{At: at, Kind: "items", Whole: true, Event: policy.EventThrottleHold},
			policy.Entry{At: at, Kind: "items", Whole: true, Event: policy.EventRoutine, Count: 3})
	}
	appendTx(t, env, es...)
	read := func(key string) (row, kind []policy.Entry) {
		got, err := ls.Ledger(ctx, "items", key, time.Time{}, time.Time{}, 100)
		must(t, err)
		for _, e := range got {
			if e.Whole {
				kind = append(kind, e)
				continue
			}
			eq(t, e.Key, key, "a row's entry of another key")
			row = append(row, e)
		}
		return row, kind
	}
	for _, key := range []string{"", "!routine", "!"} {
		row, kind := read(key)
		eq(t, [2]int{len(row), len(kind)}, [2]int{4, 4}, fmt.Sprintf("key %q: its 4 entries and its kind's 4 (no routine batch)", key))
		eq(t, kind[0], policy.Entry{At: base, Kind: "items", Whole: true, Event: policy.EventThrottleHold}, "the kind's entry")
	}
	row, kind := read("other")
	eq(t, [2]int{len(row), len(kind)}, [2]int{0, 4}, "another row sees only the kind's")

	b := models.LedgerBounds{MaxEntries: 2, KindMaxEntries: 3, RoutineMaxEntries: 1, MaxAge: 1000 * 24 * time.Hour, Chunk: 100}
	from := models.LedgerPrune{Counting: true}
	_, _, err := ls.PruneLedger(ctx, b, base.Add(time.Hour), from)
	must(t, err)
	for _, key := range []string{"", "!routine", "!"} {
		row, kind := read(key)
		eq(t, [2]int{len(row), len(kind)}, [2]int{2, 3}, fmt.Sprintf("key %q: bounded as a row, its kind's as a kind", key))
	}
	rs, err := ls.LedgerRoutine(ctx, "items", time.Time{}, time.Time{}, 100)
	must(t, err)
	eq(t, len(rs), 1, "the routine batches' own bound")
}

// The kind's batches of routine successes: read on their own, oldest
// first from the range's start; and a row's count of entries and its
// oldest, for the count bound.
func testLedgerRoutine(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	ls := ledgerOf(t, env)
	var es []policy.Entry
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Minute)
		es = append(es, policy.Entry{At: at, Kind: "items", Whole: true, Event: policy.EventRoutine, Count: 100 + i,
			Dispatched: at.Add(-2 * time.Second), DispatchedLast: at.Add(-time.Second)})
	}
	es = append(es, policy.Entry{At: base, Kind: "other", Whole: true, Event: policy.EventRoutine, Count: 1},
		policy.Entry{At: base.Add(time.Minute), Kind: "items", Key: "k", Event: policy.EventStale},
		policy.Entry{At: base.Add(2 * time.Minute), Kind: "items", Key: "k", Event: policy.EventStale})
	appendTx(t, env, es...)
	got, err := ls.LedgerRoutine(ctx, "items", base.Add(time.Minute), time.Time{}, 2)
	must(t, err)
	eq(t, got, []policy.Entry{es[1], es[2]}, "the oldest 2 from the range's start, every field")
	n, oldest, err := ls.LedgerRowSpan(ctx, "items", "k")
	must(t, err)
	eq(t, n, 2, "the row's entries")
	eq(t, oldest, base.Add(time.Minute), "its oldest")
	n, oldest, err = ls.LedgerRowSpan(ctx, "items", "none")
	must(t, err)
	eq(t, [2]any{n, oldest.IsZero()}, [2]any{0, true}, "a row without entries")
}
