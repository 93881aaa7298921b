package refresher

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// heldRead holds the dispatcher's nth read of the pauses
// (faults.beforeReadPauses) and sees the claims made while it is held,
// through a store whose claims report the keys they claimed.
type heldRead struct {
	n       int32
	before  func() // runs before the read is held (in the dispatcher's read: no FailNow)
	fail    error  // what the read fails with once let go; nil: it reads
	reads   atomic.Int32
	claims  atomic.Int32  // ClaimDue calls
	holding atomic.Bool   // the nth read is in flight
	held    chan struct{} // closed when the nth read is held
	release chan struct{} // closed by letGo
	once    sync.Once
	claimed chan []string // the keys of a claim made while the read is held
}

func newHeldRead(n int32, before func()) *heldRead {
	return &heldRead{n: n, before: before, held: make(chan struct{}), release: make(chan struct{}), claimed: make(chan []string, 1)}
}

// run starts b's service with batches of 2 on h's store and read hook.
func (h *heldRead) run(b *testBundle) *running {
	r := b.runOn(context.Background(), claimHooked{Store: b.store, h: h}, b.rio, func(c *Config) {
		c.BatchSize = 2
		c.faults.beforeReadPauses = func(string) error {
			if h.reads.Add(1) != h.n {
				return nil
			}
			h.holding.Store(true) // the read is in flight from here
			if h.before != nil {
				h.before()
			}
			close(h.held)
			<-h.release
			h.holding.Store(false)
			return h.fail
		}
	})
	b.t.Cleanup(h.letGo) // before the service stops (cleanups run last first)
	return r
}

// letGo lets the held read go on, once.
func (h *heldRead) letGo() { h.once.Do(func() { close(h.release) }) }

// waitClaimedWhileHeld returns the keys of the claim made while the read is
// held, or fails the test after 10s.
func (h *heldRead) waitClaimedWhileHeld(t *testing.T) []string {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatalf("no read %d of the pauses within 10s", h.n)
	}
	select {
	case keys := <-h.claimed:
		return keys
	case <-time.After(10 * time.Second):
		t.Fatal("no claim while the pauses' read is held, within 10s")
		return nil
	}
}

// claimHooked is a store whose claims (ClaimDue) count themselves in h and
// report their keys while h's read is held.
type claimHooked struct {
	models.Store
	h *heldRead
}

func (s claimHooked) Tx(ctx context.Context, fn func(models.Tx) error) error {
	return s.Store.Tx(ctx, func(tx models.Tx) error { return fn(claimHookedTx{tx, s.h}) })
}

type claimHookedTx struct {
	models.Tx
	h *heldRead
}

func (tx claimHookedTx) ClaimDue(ctx context.Context, t models.Table, now time.Time, from models.Cursor, n int) ([]models.Row, error) {
	rows, err := tx.Tx.ClaimDue(ctx, t, now, from, n)
	tx.h.claims.Add(1)
	if err == nil && len(rows) > 0 && tx.h.holding.Load() {
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = r.Key
		}
		select {
		case tx.h.claimed <- keys:
		default:
		}
	}
	return rows, err
}

// While the kind has a backlog, a pass claims while its read of the pauses
// is in flight (the last read found the kind not paused), and then starts
// what it claimed: with the second pass's read held, its batch is claimed;
// once the read returns, every row's job is pushed once.
func TestPassClaimsWhileThePausesAreRead(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	uids := b.insertN(5, t0)
	h := newHeldRead(2, nil) // the first pass reads first: nothing read yet
	h.run(b)
	require.Equal(t, []string{"m0002", "m0003"}, h.waitClaimedWhileHeld(t))
	h.letGo()

	b.popEachOnce(len(uids))
	b.noJob()
}

// A kind paused after a pass read the pauses and before the next one does:
// the next pass, which reads beside its claim, rolls its claim back (the
// rows keep their state, nothing is pushed) and logs the pause as a paused
// pass does; the passes after it read first and claim nothing while the
// kind is paused. Resumed, the kind's rows are dispatched, each once.
func TestKindPausedBeforeThePassReadsBesideItsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{timeout: time.Hour})
	var logs testenv.SyncBuffer
	b.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b.insertN(5, t0)
	h := newHeldRead(2, func() {
		assert.NoError(t, NewAdmin(b.store, b.rio).PauseKind(ctx, b.kind.Lists, PauseInfo{Note: "incident", By: "ops"}))
	})
	h.run(b)
	require.Equal(t, []string{"m0002", "m0003"}, h.waitClaimedWhileHeld(t))
	h.letGo()

	first := b.jobsByUID(2)
	require.Contains(t, first, "m0000")
	require.Contains(t, first, "m0001")
	b.noJob()
	claims := h.claims.Load()
	b.passes.wait(t, 3)
	require.Equal(t, claims, h.claims.Load(), "a paused kind's passes claim nothing")
	b.noJob()
	for _, uid := range []string{"m0002", "m0003", "m0004"} {
		st := b.state(uid)
		require.True(t, st.RefreshAt.Equal(t0), "%s: refresh_at %s", uid, st.RefreshAt)
		require.False(t, st.Running(), "%s", uid)
		require.Zero(t, st.AttemptNo, "%s", uid)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "kind paused by the operator, not dispatching"), logs.String())

	_, err := NewAdmin(b.store, b.rio).ResumeKind(ctx, b.kind.Lists)
	require.NoError(t, err)
	rest := b.jobsByUID(3)
	for uid, j := range rest {
		require.Equal(t, b.state(uid).AttemptUID, j.AttemptUID, "%s", uid)
	}
	require.Len(t, rest, 3)
	b.noJob()
}

// The paused models and the throttle holds that a read beside the claim
// finds apply to the rows of that claim: a paused model's row claimed
// anyway is paused again, a held group's row waits for the hold's end, and
// neither is started.
func TestPausedModelsAndHoldsApplyToTheClaimBesideTheRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.kind.Table.Payload = []string{"input_url", "name"}
	b.kind.ThrottleGroup = "name"
	b.cfg.Kinds = []Kind{b.kind}
	b.insertGroup("api-a", "a1", "a2")
	b.insertGroup("api-b", "b1")
	b.insertGroup("api-c", "c1")
	holdEnd := t0.Add(time.Hour)
	h := newHeldRead(2, func() {
		// Recorded only: the row stays due, as when a result planned it.
		assert.NoError(t, b.rio.PauseModels(ctx, b.kind.Lists, []string{"b1"}, PauseInfo{Note: "upstream down", By: "ops"}))
		assert.NoError(t, b.rio.Holds(ctx, b.kind.Lists.Throttle(), map[string]time.Time{"api-c": holdEnd}, t0))
	})
	r := h.run(b)
	require.Equal(t, []string{"b1", "c1"}, h.waitClaimedWhileHeld(t))
	h.letGo()

	first := b.jobsByUID(2)
	require.Contains(t, first, "a1")
	require.Contains(t, first, "a2")
	st := b.waitFor("b1", "paused again", func(s policy.State) bool { return s.RefreshAt.IsZero() })
	require.False(t, st.Running())
	require.Zero(t, st.AttemptNo)
	st = b.waitFor("c1", "held", func(s policy.State) bool { return s.RefreshAt.Equal(holdEnd) })
	require.False(t, st.Running())
	require.Zero(t, st.AttemptNo)
	b.noJob()
	require.Equal(t, 1.0, toFloat(r.svc.Metrics().ThrottledGroups.WithLabelValues("items")))
	require.Equal(t, 1.0, toFloat(r.svc.Metrics().Throttled.WithLabelValues("items", "held")))
}

// A read beside the claim that fails rolls the claim back and fails the
// pass: the rows it claimed keep their state, so the next pass (which
// reads first) claims and starts them, each once, rather than leaving
// them running an attempt that no job was pushed for.
func TestFailedReadBesideTheClaimRollsItBack(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	uids := b.insertN(5, t0)
	h := newHeldRead(2, nil)
	h.fail = errors.New("redis is down")
	r := h.run(b)
	require.Equal(t, []string{"m0002", "m0003"}, h.waitClaimedWhileHeld(t))
	h.letGo()

	for _, j := range b.popEachOnce(len(uids)) {
		require.Equal(t, 1, j.AttemptNo, "%s", j.UID)
	}
	b.noJob()
	require.Equal(t, 1.0, toFloat(r.svc.Metrics().Errors.WithLabelValues("items", "dispatch")))
}
