package refresher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// ledger reads the row's entries and its kind's, oldest first.
func (b *testBundle) ledger(key string) []policy.Entry {
	b.t.Helper()
	lr, ok := b.store.(models.LedgerReader)
	require.True(b.t, ok, "%T reads no ledger", b.store)
	es, err := lr.Ledger(context.Background(), "items", key, time.Time{}, time.Time{}, 100000)
	require.NoError(b.t, err)
	return es
}

// entries returns those of es whose key is key and whose event is ev.
func entries(es []policy.Entry, key string, ev policy.Event) []policy.Entry {
	var out []policy.Entry
	for _, e := range es {
		if e.Key == key && e.Event == ev {
			out = append(out, e)
		}
	}
	return out
}

// waitEntries waits up to 10s for at least n entries of ev about key ("":
// the kind's) and returns them.
func (b *testBundle) waitEntries(key string, ev policy.Event, n int) []policy.Entry {
	b.t.Helper()
	var got []policy.Entry
	testenv.EventuallyNil(b.t, 10*time.Second, fmt.Sprintf("%d %s entries of %q", n, ev, key), func() error {
		all := b.ledger(key)
		if got = entries(all, key, ev); len(got) >= n {
			return nil
		}
		return fmt.Errorf("ledger: %s", events(all))
	})
	return got
}

// events lists es's events for a failure message.
func events(es []policy.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s %q %s", e.At.Format("15:04:05.000000"), e.Key, e.Event))
	}
	return strings.Join(out, ", ")
}

// ledgerOn turns the ledger on (it is off by default), with every success
// a row entry (ledger.routine: rows), as the tests of each decision read
// them; ledgerBatches keeps the default, plain successes per batch.
func ledgerOn(c *Config) { c.Ledger.On, c.Ledger.RoutineRows = true, true }

func ledgerBatches(c *Config) { c.Ledger.On = true }

// A row's life through the real Service and Admin, each decision an entry:
// dispatched, a failure and its retry bounded by Retry-After, a stale
// answer, a lease, a success with its next occurrence; the operator's
// trigger at a priority, pauses and resumes of the model and the kind, an
// enable, each with who did it; a timeout; a permanent failure that
// disables the row.
func TestLedgerRecordsARowsLife(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		ctx := context.Background()
		b := setup(t, setupOpts{store: store, timeout: 10 * time.Minute, retry: "delays:0s,5m"})
		b.insert("m1")
		b.start(ledgerOn)

		j1 := b.popJob()
		d := b.waitEntries("m1", policy.EventDispatched, 1)[0]
		require.Equal(t, policy.Entry{At: t0, Kind: "items", Key: "m1", Event: policy.EventDispatched, Attempt: j1.AttemptUID, Planned: t0}, d)

		b.send(redisio.Result{UID: "m1", AttemptUID: j1.AttemptUID, Type: "failure", Reason: "HTTP 503", RetryAfterSeconds: 120})
		f := b.waitEntries("m1", policy.EventFailed, 1)[0]
		require.Equal(t, policy.Entry{At: t0, Kind: "items", Key: "m1", Event: policy.EventFailed, Attempt: j1.AttemptUID, Dispatched: t0,
			Reason: "HTTP 503", Next: t0.Add(2 * time.Minute), Bound: policy.BoundRetryAfter}, f)

		now := b.clock.Advance(2 * time.Minute)
		j2 := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: j1.AttemptUID, Type: "success"})
		require.Equal(t, j1.AttemptUID, b.waitEntries("m1", policy.EventStale, 1)[0].Attempt, "the old attempt's answer is stale")
		b.send(redisio.Result{UID: "m1", AttemptUID: j2.AttemptUID, Type: "extend", Seconds: 900})
		ext := b.waitEntries("m1", policy.EventExtended, 1)[0]
		require.True(t, ext.Until.Equal(now.Add(15*time.Minute)), "lease until %s", ext.Until)
		b.send(redisio.Result{UID: "m1", AttemptUID: j2.AttemptUID, Type: "success"})
		s := b.waitEntries("m1", policy.EventSucceeded, 1)[0]
		require.Equal(t, j2.AttemptUID, s.Attempt)
		require.True(t, s.Next.Equal(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)), "next occurrence %s", s.Next)

		// The operator, through Admin as the API and the CLI call it.
		admin := NewAdmin(b.store, b.rio).Recording("items", "alice", b.clock.Now)
		level := -5
		_, err := admin.TriggerAt(&level)(ctx, b.kind.Table, []string{"m1", "nope"}, b.clock.Now())
		require.NoError(t, err)
		tr := b.waitEntries("m1", policy.EventTriggered, 1)[0]
		require.Equal(t, "alice", tr.By)
		require.Equal(t, &level, tr.Priority)
		j3 := b.popJob()
		d3 := b.waitEntries("m1", policy.EventDispatched, 3)[2]
		require.Equal(t, j3.AttemptUID, d3.Attempt)
		require.Equal(t, &level, d3.Priority, "claimed at the triggered priority")
		require.True(t, d3.Planned.Equal(b.clock.Now()), "the occurrence it ran for: the trigger's now")

		_, err = admin.Pause(ctx, b.kind.Table, b.kind.Lists, []string{"m1"}, PauseInfo{Note: "broken feed", By: "alice", At: b.clock.Now()})
		require.NoError(t, err)
		p := b.waitEntries("m1", policy.EventPaused, 1)[0]
		require.Equal(t, []string{"alice", "broken feed"}, []string{p.By, p.Note})
		_, err = admin.Resume(ctx, b.kind.Table, b.kind.Lists, []string{"m1"}, b.clock.Now(), func(string, string) policy.Nexter { return b.kind.Schedule })
		require.NoError(t, err)
		require.Equal(t, "alice", b.waitEntries("m1", policy.EventResumed, 1)[0].By)
		require.NoError(t, admin.PauseKind(ctx, b.kind.Lists, PauseInfo{Note: "deploy", By: "alice", At: b.clock.Now()}))
		kp := b.waitEntries("", policy.EventPaused, 1)[0]
		require.Equal(t, policy.Entry{At: b.clock.Now(), Kind: "items", Whole: true, Event: policy.EventPaused, By: "alice", Note: "deploy"}, kp)
		was, err := admin.ResumeKind(ctx, b.kind.Lists)
		require.NoError(t, err)
		require.True(t, was)
		b.waitEntries("", policy.EventResumed, 1)
		require.Len(t, entries(b.ledger("m1"), "", policy.EventPaused), 1, "the kind's entries come with any row's")

		// j3 runs past its timeout_at: the dispatcher ends it.
		b.clock.Advance(11 * time.Minute)
		to := b.waitEntries("m1", policy.EventTimedOut, 1)[0]
		require.Equal(t, j3.AttemptUID, to.Attempt)
		require.Equal(t, "timed out after 10m", to.Reason)
		require.Equal(t, policy.BoundRetryList, to.Bound)
		require.True(t, to.Next.Equal(b.clock.Now()), "delays[0] = 0s: retried at once")

		// The retry started in the same pass; a permanent failure disables.
		j4 := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: j4.AttemptUID, Type: "failure", Permanent: true, Reason: "HTTP 404",
			UserFriendlyReason: "The feed is gone"})
		pf := b.waitEntries("m1", policy.EventFailed, 2)[1]
		require.True(t, pf.Disabled)
		require.Equal(t, "HTTP 404", pf.Reason)
		dis := b.waitEntries("m1", policy.EventDisabled, 1)[0]
		require.Equal(t, "The feed is gone", dis.Reason)

		_, err = admin.Enable(ctx, b.kind.Table, []string{"m1"}, b.clock.Now())
		require.NoError(t, err)
		en := b.waitEntries("m1", policy.EventEnabled, 1)[0]
		require.Equal(t, "alice", en.By)
		require.Empty(t, entries(b.ledger("nope"), "nope", policy.EventTriggered), "a key without a row has no entry")
	})
}

// What holds a row back, each an entry: a throttle hold of its group (the
// kind's entry with the group, and the row's when it is held), a misfire
// skipped after downtime, an invalid rule, retries exhausted, a late
// answer, an incident opened and closed with the window's figures.
func TestLedgerRecordsWhatHoldsRowsBack(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:0s"})
	b.kind.Table.Payload = []string{"input_url", "name"}
	b.kind.ThrottleGroup = "name"
	b.kind.Policy.Catchup = policy.Catchup{Window: time.Hour, Misfire: policy.MisfireSkip}
	b.kind.Policy.Guard = policy.Guard{MinResults: 3, Threshold: 0.5}
	b.cfg.Kinds = []Kind{b.kind}
	b.insertGroup("api-a", "a1")
	b.exec("INSERT INTO items (uid, refresh_at) VALUES (?, ?)", "missed", t0.Add(-2*time.Hour))
	b.exec("INSERT INTO items (uid, refresh_at, refresh_rrule) VALUES (?, ?, ?)", "badrule", t0, "RRULE:FREQ=SOMETIMES")
	b.start(ledgerOn)

	miss := b.waitEntries("missed", policy.EventMisfireSkipped, 1)[0]
	require.True(t, miss.Planned.Equal(t0.Add(-2*time.Hour)), "the occurrence missed: %s", miss.Planned)
	require.True(t, miss.Next.Equal(t0.Add(4*time.Hour)), "the next one: %s", miss.Next)
	bad := b.waitEntries("badrule", policy.EventDisabled, 1)[0]
	require.Contains(t, bad.Reason, "Invalid refresh schedule")

	// A 429 with Retry-After holds the group.
	j := b.popJob()
	require.Equal(t, "a1", j.UID)
	b.send(redisio.Result{UID: "a1", AttemptUID: j.AttemptUID, Type: "failure", Reason: "HTTP 429", RetryAfterSeconds: 600, ThrottleKey: "api-a"})
	hold := b.waitEntries("", policy.EventThrottleHold, 1)[0]
	require.Equal(t, "api-a", hold.Group)
	require.True(t, hold.Until.Equal(t0.Add(10*time.Minute)), "until %s", hold.Until)
	// A row of the group due meanwhile is held, not started (once the hold
	// is in Redis, written just after the commit).
	key := b.kind.Lists.Input + ":throttle"
	waitCounter(t, func() float64 { return float64(b.rdb.Exists(context.Background(), key).Val()) }, 1, "hold written")
	b.insertGroup("api-a", "a2")
	rowHold := b.waitEntries("a2", policy.EventThrottleHold, 1)[0]
	require.True(t, rowHold.Until.Equal(t0.Add(10*time.Minute)), "until %s", rowHold.Until)
	require.Empty(t, entries(b.ledger("a2"), "a2", policy.EventDispatched))

	// Retries exhausted: delays:0s gives up at the 2nd failure.
	b.clock.Advance(10 * time.Minute)
	jobs := b.jobsByUID(2)
	b.send(redisio.Result{UID: "a1", AttemptUID: jobs["a1"].AttemptUID, Type: "failure", Reason: "HTTP 500"})
	gave := b.waitEntries("a1", policy.EventDisabled, 1)[0]
	require.Equal(t, "Cannot refresh items after 2 attempt(s)", gave.Reason)
	// 2 failures of 2 results... and a third: the incident opens.
	b.send(redisio.Result{UID: "a2", AttemptUID: jobs["a2"].AttemptUID, Type: "failure", Reason: "HTTP 500"})
	b.waitEntries("a2", policy.EventFailed, 1)
	b.insert("x1")
	jx := b.popJob()
	for jx.UID != "x1" { // a2's retry, when its failure came before the incident
		jx = b.popJob()
	}
	b.send(redisio.Result{UID: "x1", AttemptUID: jx.AttemptUID, Type: "failure", Reason: "HTTP 500"})
	open := b.waitEntries("", policy.EventIncidentOpened, 1)[0]
	require.Regexp(t, `^\d+ failures of \d+ results in the last 5m \(threshold 0.5 of at least 3\)$`, open.Reason)
	fx := b.waitEntries("x1", policy.EventFailed, 1)[0]
	require.Equal(t, policy.BoundIncidentFloor, fx.Bound, "during the incident the retry waits the guard's 1m")

	// Past the window: the next batch closes it.
	b.clock.Advance(10 * time.Minute)
	jx2 := b.popJob()
	for jx2.UID != "x1" { // a2's retry comes too
		jx2 = b.popJob()
	}
	b.send(redisio.Result{UID: "x1", AttemptUID: jx2.AttemptUID, Type: "success"})
	b.waitEntries("", policy.EventIncidentClosed, 1)
}

// A result read at timeout_at is late: a late entry, then the timeout's.
func TestLedgerRecordsALateAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:1h"})
	b.insert("m1")
	firstPass, release := make(chan struct{}), make(chan struct{})
	b.start(func(c *Config) {
		ledgerOn(c)
		c.Observer.AfterDispatch = func(_ string, started int) {
			if started > 0 {
				close(firstPass)
				<-release // held: the poller meets the timeout first
			}
		}
	})
	t.Cleanup(func() { close(release) })
	<-firstPass
	j := b.popJob()
	b.clock.Advance(time.Hour)
	b.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "success"})
	to := b.waitEntries("m1", policy.EventTimedOut, 1)[0]
	es := b.ledger("m1")
	require.Equal(t, []policy.Event{policy.EventDispatched, policy.EventLate, policy.EventTimedOut},
		[]policy.Event{es[0].Event, es[1].Event, es[2].Event}, events(es))
	require.Equal(t, j.AttemptUID, es[1].Attempt)
	require.True(t, to.Next.Equal(t0.Add(2*time.Hour)), "retry %s", to.Next)
	require.Equal(t, policy.BoundRetryList, to.Bound)
}

// A batch whose transaction rolls back leaves no entry: the poller
// "crashes" before its commit, and the result applied after the restart
// has its one entry.
func TestLedgerRollsBackWithTheBatch(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("m1")
		crashed := make(chan struct{})
		r := b.runOn(context.Background(), b.store, b.rio, func(c *Config) {
			ledgerOn(c)
			c.faults.beforeCommit = func(string) error {
				select {
				case <-crashed:
				default:
					close(crashed)
				}
				return fmt.Errorf("crash")
			}
		})
		j := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "success"})
		<-crashed
		r.stop()
		require.Empty(t, entries(b.ledger("m1"), "m1", policy.EventSucceeded), "the rolled-back batch left no entry")
		require.Len(t, entries(b.ledger("m1"), "m1", policy.EventDispatched), 1, "the restart keeps the committed entries")

		// Restarted (after the heartbeat, the batch is recovered).
		b.runOn(context.Background(), b.store, b.rio, func(c *Config) { ledgerOn(c); c.InstanceID = "test-b" })
		b.waitEntries("m1", policy.EventSucceeded, 1)
		time.Sleep(200 * time.Millisecond) // the time itself: no second entry comes later
		require.Len(t, entries(b.ledger("m1"), "m1", policy.EventSucceeded), 1)
		require.Len(t, entries(b.ledger("m1"), "m1", policy.EventDispatched), 1)
	})
}

// Two instances on one database, claiming and applying concurrently: every
// decision of each is in the ledger, none twice.
func TestLedgerTwoInstancesLoseNothing(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		const n = 600
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.start(func(c *Config) { ledgerOn(c); c.InstanceID, c.BatchSize = "a", 50 })
		b.start(func(c *Config) { ledgerOn(c); c.InstanceID, c.BatchSize = "b", 50 })
		uids := b.insertN(n, t0)
		jobs := b.popJobs(n)
		rs := make([]redisio.Result, n)
		for i, j := range jobs {
			rs[i] = redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"}
		}
		b.sendAll(rs...)
		lr := b.store.(models.LedgerReader)
		testenv.EventuallyNil(t, 20*time.Second, "every row's success recorded", func() error {
			es, err := lr.Ledger(context.Background(), "items", uids[n-1], time.Time{}, time.Time{}, 10)
			if err != nil || len(entries(es, uids[n-1], policy.EventSucceeded)) == 0 {
				return fmt.Errorf("last row: %v %s", err, events(es))
			}
			var total int
			require.NoError(t, b.d.QueryRow("SELECT COUNT(*) FROM refresher_ledger").Scan(&total))
			if total < 2*n {
				return fmt.Errorf("%d entries", total)
			}
			return nil
		})
		for _, uid := range uids {
			es := b.ledger(uid)
			got := []policy.Event{}
			for _, e := range es {
				got = append(got, e.Event)
			}
			require.Equal(t, []policy.Event{policy.EventDispatched, policy.EventSucceeded}, got, uid)
		}
	})
}

// The service prunes the ledger to its bounds; off, it records nothing.
func TestLedgerBoundsAndOff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:0s"})
	b.insert("m1")
	b.start(func(c *Config) {
		c.Ledger = LedgerConfig{On: true, RoutineRows: true, Bounds: models.LedgerBounds{MaxEntries: 3}, PruneEvery: 20 * time.Millisecond}
	})
	for range 3 { // each round: dispatched, succeeded; triggered by the operator
		j := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "success"})
		b.waitFor("m1", "success", func(s policy.State) bool { return !s.Running() })
		_, err := NewAdmin(b.store, b.rio).Recording("items", "cli", b.clock.Now).Trigger(context.Background(), b.kind.Table, []string{"m1"}, b.clock.Now())
		require.NoError(t, err)
		b.clock.Advance(time.Minute)
	}
	testenv.EventuallyNil(t, 10*time.Second, "m1 pruned to 3 entries", func() error {
		if es := b.ledger("m1"); len(es) != 3 {
			return fmt.Errorf("%d entries: %s", len(es), events(es))
		}
		return nil
	})
	es := b.ledger("m1")
	require.True(t, slices.IsSortedFunc(es, func(x, y policy.Entry) int { return x.At.Compare(y.At) }))
	// The newest are kept: the last round's success and trigger (10:02)
	// and one entry of 10:01 or later. The last round's dispatch may be at
	// 10:01: the dispatcher can claim the row its trigger made due before
	// the clock advances.
	last := 0
	for _, e := range es {
		require.False(t, e.At.Before(t0.Add(time.Minute)), "the newest are kept: %s", events(es))
		if !e.At.Before(t0.Add(2 * time.Minute)) {
			last++
		}
	}
	require.GreaterOrEqual(t, last, 2, "the last round's success and trigger are kept: %s", events(es))

	off := setup(t, setupOpts{timeout: time.Hour})
	off.insert("m1")
	r := off.runOn(context.Background(), off.store, off.rio, nil) // the default: off
	j := off.popJob()
	off.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "success"})
	off.waitFor("m1", "success", func(s policy.State) bool { return !s.Running() })
	var total int
	require.NoError(t, off.d.QueryRow("SELECT COUNT(*) FROM refresher_ledger").Scan(&total))
	require.Zero(t, total, "off: nothing recorded")

	// A database without the table (not migrated since the upgrade): the
	// operator's actions work and record nothing.
	off.exec("DROP TABLE refresher_ledger")
	_, err := NewAdmin(off.store, off.rio).Recording("items", "cli", off.clock.Now).Enable(context.Background(), off.kind.Table, []string{"m1"}, off.clock.Now())
	require.NoError(t, err)
	// And a service with the ledger on serves it as before (alone: its
	// batches would fail if it wrote to the missing table).
	r.stop()
	off.start(func(c *Config) { ledgerOn(c); c.InstanceID = "test-b" })
	j = off.popJob()
	off.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "success"})
	off.waitFor("m1", "success without a ledger table", func(s policy.State) bool { return !s.Running() && s.AttemptUID == "" })
}

// Off, the recording costs no allocation per row: the batch is nil.
func TestLedgerOffAllocatesNothing(t *testing.T) {
	b := newLedgerBatch("items", LedgerConfig{})
	row := models.Row{Key: "k"}
	p := policy.Policy{}.WithDefaults()
	now := t0
	allocs := testing.AllocsPerRun(100, func() {
		b.reset()
		b.due(&row, &row.State, &policy.DueDecision{Action: policy.DueStarted, AttemptUID: "a"}, nil, &p, now)
		b.apply("k", policy.Result{Type: policy.ResultSuccess}, row.State, row.State, policy.ApplyDecision{Outcome: policy.OutcomeApplied}, p, now)
		b.succeeded("k", "a", now, now, now)
		b.holds(nil, now)
	})
	require.Zero(t, allocs)
}

// What the service records, Admin.Why (branch why's reader) explains: a
// success at 14:00 recorded on every store, and a failure's retry.
func TestLedgerExplainedByWhy(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: 10 * time.Minute, retry: "delays:5m"})
		b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", "m1", "https://example.com/m1", t0.Add(4*time.Hour))
		b.start(ledgerOn)
		b.clock.Advance(4 * time.Hour) // 14:00
		j := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "failure", Reason: "HTTP 503"})
		b.waitEntries("m1", policy.EventFailed, 1)
		b.clock.Advance(5 * time.Minute)
		j2 := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: j2.AttemptUID, Type: "success"})
		b.waitEntries("m1", policy.EventSucceeded, 1)

		k := WhyKind{Name: "items", Table: b.kind.Table, Schedule: b.kind.Schedule, Policy: b.kind.Policy}
		ans, err := NewAdmin(b.store, b.rio).Why(context.Background(), k, "m1", t0.Add(4*time.Hour), b.clock.Now())
		require.NoError(t, err)
		require.NotEmpty(t, ans.Entries, "the answer cites recorded entries: %s", ans.Sentence)
		require.Contains(t, ans.Sentence, "HTTP 503", "the failure's reason, from the ledger")
		t.Log(ans.Sentence)
	})
}

// A routine cycle, a start from its occurrence and its success, is one
// entry on every store: the success, which carries the dispatch (from
// the attempt's xid on the success path that does not read the row; from
// the row on the one that does, as a failure's). Why tells it as before.
func TestLedgerRoutineCycleIsOneEntry(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: 10 * time.Minute, retry: "delays:5m"})
		at14 := t0.Add(4 * time.Hour) // an occurrence of dailyAt14
		b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", "m1", "https://example.com/m1", at14)
		b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", "m2", "https://example.com/m2", at14)
		b.start(ledgerOn)
		b.clock.Advance(4*time.Hour + 1500*time.Millisecond) // 14:00:01.5
		jobs := b.jobsByUID(2)
		b.send(redisio.Result{UID: "m1", AttemptUID: jobs["m1"].AttemptUID, Type: "success"})
		b.send(redisio.Result{UID: "m2", AttemptUID: jobs["m2"].AttemptUID, Type: "failure", Reason: "HTTP 503"})
		s := b.waitEntries("m1", policy.EventSucceeded, 1)[0]
		f := b.waitEntries("m2", policy.EventFailed, 1)[0]
		es := b.ledger("m1")
		require.Equal(t, []policy.Event{policy.EventSucceeded}, []policy.Event{es[0].Event}, events(es))
		require.Len(t, es, 1, events(es))
		require.Equal(t, jobs["m1"].AttemptUID, s.Attempt)
		// The xid's second on the path that does not read the row; the
		// row's attempt time on the one that does (a batch with m2's failure).
		require.Equal(t, at14.Add(time.Second), s.Dispatched.Truncate(time.Second), "dispatched %s", s.Dispatched)
		require.Empty(t, entries(b.ledger("m2"), "m2", policy.EventDispatched), "a routine start has no entry")
		require.Equal(t, at14.Add(time.Second), f.Dispatched.Truncate(time.Second), "from the row: %s", f.Dispatched)

		k := WhyKind{Name: "items", Table: b.kind.Table, Schedule: b.kind.Schedule, Policy: b.kind.Policy}
		ans, err := NewAdmin(b.store, b.rio).Why(context.Background(), k, "m1", at14, b.clock.Now())
		require.NoError(t, err)
		require.Equal(t, "Nov 21 14:00 UTC was planned. It was dispatched at 14:00:01 and succeeded at 14:00:01.", ans.Sentence)
		require.Equal(t, []policy.Entry{s}, ans.Entries)
		ans, err = NewAdmin(b.store, b.rio).Why(context.Background(), k, "m2", at14, b.clock.Now())
		require.NoError(t, err)
		require.Equal(t, "Nov 21 14:00 UTC was planned. It was dispatched at 14:00:01 and failed at 14:00:01 (HTTP 503); the retry list planned a retry at 14:05:01.", ans.Sentence)
	})
}

// A push that fails undoes its attempt: an undone entry names the
// dispatched attempt. A rule without occurrences left ends the row's plan:
// its success has no next, and a disabled entry says why.
func TestLedgerRecordsAnUndonePushAndTheRulesEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("m1")
	b.exec("INSERT INTO items (uid, refresh_at, refresh_rrule) VALUES (?, ?, ?)", "once", t0,
		"DTSTART:20261121T100000Z\nRRULE:FREQ=DAILY;COUNT=1")
	proxy, rio := redisVia(t)
	var once sync.Once
	b.runOn(context.Background(), b.store, rio, func(c *Config) {
		ledgerOn(c)
		c.faults.beforePush = func(string) { once.Do(proxy.Cut) }
	})
	u := b.waitEntries("m1", policy.EventUndone, 1)[0]
	require.Equal(t, b.waitEntries("m1", policy.EventDispatched, 1)[0].Attempt, u.Attempt)
	require.True(t, u.Planned.Equal(t0) && u.Dispatched.Equal(t0), "the undone dispatch: planned %s, dispatched %s", u.Planned, u.Dispatched)

	// Redis back: the rows are dispatched again; "once" succeeds.
	proxy.Restore()
	var j redisio.Job
	for j.UID != "once" {
		j = b.popJob()
	}
	b.send(redisio.Result{UID: "once", AttemptUID: j.AttemptUID, Type: "success"})
	s := b.waitEntries("once", policy.EventSucceeded, 1)[0]
	require.True(t, s.Next.IsZero(), "no next occurrence: %s", s.Next)
	require.Equal(t, "the rule has no occurrence left", b.waitEntries("once", policy.EventDisabled, 1)[0].Reason)
}

// A kind's pause still open where the read for the occurrence ends (one
// period and the timeout after it) but resumed before now: Why reads on
// to now and tells the resume and the dispatch after it, never "has been
// paused since" for a kind that runs again.
func TestWhyReadsOnPastAPauseOpenAtTheRangesEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{store: teststore.SQLite, timeout: 10 * time.Minute, rule: "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY"})
	b.insert("m1")
	at := func(h, m int) time.Time { return time.Date(2026, 11, 21, h, m, 0, 0, time.UTC) }
	ls := b.store.(models.LedgerStore)
	require.NoError(t, ls.AppendLedger(context.Background(), []policy.Entry{
		{At: at(13, 50), Kind: "items", Whole: true, Event: policy.EventPaused, By: "ops", Note: "failover"},
		{At: at(15, 30), Kind: "items", Whole: true, Event: policy.EventResumed, By: "ops"},
		{At: at(15, 30), Kind: "items", Key: "m1", Event: policy.EventDispatched, Attempt: "a1", Planned: at(14, 0)},
		{At: at(15, 31), Kind: "items", Key: "m1", Event: policy.EventSucceeded, Attempt: "a1", Next: at(16, 0)},
	}))
	k := WhyKind{Name: "items", Table: b.kind.Table, Schedule: b.kind.Schedule, Policy: b.kind.Policy}
	now := at(16, 0)
	ans, err := NewAdmin(b.store, b.rio).Why(context.Background(), k, "m1", at(14, 0), now)
	require.NoError(t, err)
	require.Equal(t, "Nov 21 14:00 UTC was planned. It was not dispatched at 14:00: the kind was paused from 13:50 to 15:30 by ops ('failover'). It was dispatched at 15:30 and succeeded at 15:31.", ans.Sentence)
	require.Equal(t, now, ans.To, "the read went on to now")
}

// The dispatcher's memo of policy.RoutineStart answers as RoutineStart
// whatever the sequence of schedules, refresh_at, seconds and decisions.
func TestLedgerRoutineStartMemo(t *testing.T) {
	t.Parallel()
	daily, err := schedule.Parse(dailyAt14)
	require.NoError(t, err)
	hourly, err := schedule.Parse("DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	require.NoError(t, err)
	spread := policy.Spreaded(hourly, 90*time.Second)
	scheds := []policy.Nexter{daily, hourly, spread, nil}
	at14 := t0.Add(4 * time.Hour)
	planned := []time.Time{at14, at14.Add(-24 * time.Hour), at14.Add(time.Hour), at14.Add(90 * time.Second), at14.Add(37 * time.Minute)}
	nows := []time.Time{at14.Add(300 * time.Millisecond), at14.Add(50 * time.Minute), at14.Add(61 * time.Minute), at14.Add(3 * time.Minute)}
	b := newLedgerBatch("items", LedgerConfig{On: true, RoutineRows: true})
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		d := policy.DueDecision{Action: policy.DueStarted, BeforeStart: policy.State{RefreshAt: planned[rng.IntN(len(planned))]}}
		if rng.IntN(8) == 0 {
			d.BeforeStart.AttemptNo = 1
		}
		if rng.IntN(8) == 0 {
			d.TimedOut = true
		}
		sched, now := scheds[rng.IntN(len(scheds))], nows[rng.IntN(len(nows))]
		want := policy.RoutineStart(d, sched, now)
		require.Equal(t, want, b.routineStart(&d, sched, now), "step %d: %s from %s at %s", i, sched, d.BeforeStart.RefreshAt, now)
	}
}

// routineCount sums the counts of the kind's batches of routine successes.
func (b *testBundle) routineCount() (n int, batches []policy.Entry) {
	b.t.Helper()
	es, err := b.store.(models.LedgerReader).LedgerRoutine(context.Background(), "items", time.Time{}, time.Time{}, 100000)
	require.NoError(b.t, err)
	for _, e := range es {
		n += e.Count
	}
	return n, es
}

// With ledger.routine "batches" (the default), a routine cycle writes no
// row entry on any store: its batch's one routine entry counts it, with
// its dispatch's second; a failure keeps its row entry. Why tells the
// routine cycle from the batch and the row's columns.
func TestLedgerRoutineBatches(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: 10 * time.Minute, retry: "delays:5m"})
		at14 := t0.Add(4 * time.Hour) // an occurrence of dailyAt14
		for _, k := range []string{"m1", "m2", "m3"} {
			b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", k, "https://example.com/"+k, at14)
		}
		b.start(ledgerBatches)
		b.clock.Advance(4*time.Hour + 1500*time.Millisecond) // 14:00:01.5
		jobs := b.jobsByUID(3)
		b.send(redisio.Result{UID: "m1", AttemptUID: jobs["m1"].AttemptUID, Type: "success"})
		b.send(redisio.Result{UID: "m2", AttemptUID: jobs["m2"].AttemptUID, Type: "success"})
		b.send(redisio.Result{UID: "m3", AttemptUID: jobs["m3"].AttemptUID, Type: "failure", Reason: "HTTP 503"})
		b.waitEntries("m3", policy.EventFailed, 1)
		var batches []policy.Entry
		testenv.EventuallyNil(t, 10*time.Second, "2 routine successes", func() error {
			var n int
			if n, batches = b.routineCount(); n != 2 {
				return fmt.Errorf("%d: %s", n, events(batches))
			}
			return nil
		})
		for _, e := range batches {
			require.True(t, e.Whole, "a kind's entry")
			require.Equal(t, at14.Add(time.Second), e.Dispatched, "the dispatches' second")
			require.Equal(t, at14.Add(time.Second), e.DispatchedLast)
		}
		require.Empty(t, b.ledger("m1"), "a routine cycle has no row entry")
		require.Empty(t, b.ledger("m2"))

		k := WhyKind{Name: "items", Table: b.kind.Table, Schedule: b.kind.Schedule, Policy: b.kind.Policy}
		ans, err := NewAdmin(b.store, b.rio).Why(context.Background(), k, "m1", at14, b.clock.Now())
		require.NoError(t, err)
		require.Equal(t, "Nov 21 14:00 UTC was planned. It ran as usual: it was dispatched at 14:00:01 and succeeded at 14:00:01 (its last attempt, from the model's columns; routine successes are recorded per batch, not per model).", ans.Sentence)
		require.NotEmpty(t, ans.Entries, "it cites the batch")
		ans, err = NewAdmin(b.store, b.rio).Why(context.Background(), k, "m3", at14, b.clock.Now())
		require.NoError(t, err)
		require.Equal(t, "Nov 21 14:00 UTC was planned. It was dispatched at 14:00:01 and failed at 14:00:01 (HTTP 503); the retry list planned a retry at 14:05:01.", ans.Sentence)

		// The day before, older than every batch left: it cannot tell.
		ans, err = NewAdmin(b.store, b.rio).Why(context.Background(), k, "m1", at14.Add(-24*time.Hour), b.clock.Now())
		require.NoError(t, err)
		require.Equal(t, "Nov 20 14:00 UTC was planned. A routine cycle leaves no entry of its own, and the kind's oldest batch of routine successes left is from Nov 21 14:00:01, after it (the ledger keeps the last ledger.routine_max_entries of them, and none from before it was on): it cannot tell what happened then.", ans.Sentence)

		// The ledger off since: Why answers from the columns, not from the
		// entries left.
		k.LedgerOff = true
		ans, err = NewAdmin(b.store, b.rio).Why(context.Background(), k, "m3", at14, b.clock.Now())
		require.NoError(t, err)
		require.Equal(t, policy.CauseLedgerOff, ans.Cause, ans.Sentence)
		require.Contains(t, ans.Sentence, "The ledger is off (ledger.enabled: false); its newest entry about this model or its kind is from Nov 21 14:00:01 UTC.")
	})
}

// Two instances in batches mode: the counts of their routine entries add
// up to every success, and no row has an entry.
func TestLedgerRoutineBatchesTwoInstances(t *testing.T) {
	t.Parallel()
	const n = 300
	b := setup(t, setupOpts{store: teststore.Postgres, timeout: time.Hour})
	b.start(func(c *Config) { ledgerBatches(c); c.InstanceID, c.BatchSize = "a", 50 })
	b.start(func(c *Config) { ledgerBatches(c); c.InstanceID, c.BatchSize = "b", 50 })
	uids := b.insertN(n, t0)
	jobs := b.popJobs(n)
	rs := make([]redisio.Result, n)
	for i, j := range jobs {
		rs[i] = redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"}
	}
	b.sendAll(rs...)
	testenv.EventuallyNil(t, 20*time.Second, "every success counted", func() error {
		if got, es := b.routineCount(); got != n {
			return fmt.Errorf("%d of %d in %d batches", got, n, len(es))
		}
		return nil
	})
	for _, uid := range []string{uids[0], uids[n-1]} {
		require.Empty(t, entries(b.ledger(uid), uid, policy.EventSucceeded), "no row entry for a plain success")
	}
}
