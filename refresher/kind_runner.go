package refresher

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// kindRunner holds what the dispatcher and poller of one kind share.
type kindRunner struct {
	cfg     Config
	kind    Kind
	store   models.Store
	rdb     *redisio.Client
	clock   Clock
	log     *slog.Logger
	metrics *Metrics
	// observer and faults are Config's (see Observer and faults).
	observer Observer
	faults   faults
	// activity sums the kind's work for its periodic log line.
	activity *activity
	// throttle and incident are the kind's throttle groups and incident
	// guard, shared by its dispatcher and poller.
	throttle *throttle
	incident *incident
	// ledger is the kind's database's ledger, for the entries of the
	// whole kind (recordKind); nil when the ledger is off (see
	// Service.ledgers).
	ledger models.LedgerStore
	// fatal stops the service and makes Run return err: for an error no
	// retry can fix (see Service). Outages are retried, never fatal.
	fatal func(err error)
}

// rand returns the jitter draw for one failure.
func (r *kindRunner) rand() float64 { return r.cfg.Rand() }

// batchContext returns the context for the I/O of one batch: it is not
// cancelled with ctx, so a batch in hand finishes on shutdown, and it is
// bounded by OpTimeout so nothing hangs.
func (r *kindRunner) batchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.OpTimeout)
}

// dueGate is the dispatcher's gate to the store (dispatcher.gate): a
// dispatcher pass whose kind has nothing due skips its claim transaction.
// A claim is 4 round trips (isolation level, BEGIN, SELECT ... FOR UPDATE
// SKIP LOCKED, COMMIT) besides NextDue's one. (An idle kind makes no
// passes at all: its dispatcher parks at the due watch, see dueWatch; the
// gate serves the passes of kinds with rows due soon, or due but not
// claimable.)
//
// Tx first asks NextDue (one indexed row, no lock), unless Due asked it
// just before for this pass. When no row is due at the clock's now it runs
// fn on a transaction that claims nothing (what the database's ClaimDue
// would have returned) and keeps the answer for the dispatcher's NextDue
// that follows the pass. Otherwise it runs the real transaction. A row that
// becomes due in between is claimed by the next pass, as it would be after
// an empty claim.
// It is used by one dispatcher goroutine.
type dueGate struct {
	store models.Store
	table models.Table
	clock Clock

	known  bool // next, ok hold the answer of the last Tx's NextDue
	peeked bool // next, ok hold the answer of Due, for the Tx that follows
	next   time.Time
	ok     bool
	// full says that the last pass claimed a full batch: rows are most
	// likely due still, so the next Due answers yes without asking NextDue
	// and its Tx claims. A backlog thus costs no NextDue per batch; the
	// pass after the last full batch may claim nothing.
	full bool
}

// Due reports whether a row is due at the clock's now. The dispatcher asks
// it first in each pass: with nothing due, a pass reads nothing else (no
// input list length, no pauses, no throttle holds) and the answer serves
// the NextDue that follows the pass; with a row due, it serves the Tx of
// the same pass, so the pass still asks NextDue once.
func (g *dueGate) Due(ctx context.Context) (bool, error) {
	if g.full {
		// Read by Tx as "due" (ok, not after now).
		g.full, g.next, g.ok = false, time.Time{}, true
		g.peeked, g.known = true, false
		return true, nil
	}
	next, ok, err := g.store.NextDue(ctx, g.table)
	if err != nil {
		g.peeked, g.known = false, false
		return false, err
	}
	due := ok && !next.After(g.clock.Now())
	g.next, g.ok = next, ok
	g.peeked, g.known = due, !due
	return due, nil
}

// Tx runs fn on a claim transaction, or on one that claims nothing when
// no row is due (see dueGate).
func (g *dueGate) Tx(ctx context.Context, fn func(tx models.Tx) error) error {
	var next time.Time
	var ok bool
	var err error
	if g.peeked {
		g.peeked = false
		next, ok = g.next, g.ok
	} else {
		next, ok, err = g.store.NextDue(ctx, g.table)
	}
	if err != nil || (ok && !next.After(g.clock.Now())) {
		g.known = false
		return g.store.Tx(ctx, fn)
	}
	g.known, g.next, g.ok = true, next, ok
	return fn(nothingDue{})
}

// NextDue is the store's NextDue of the gate's table, answered from the
// last Tx or Due when that one already asked it.
func (g *dueGate) NextDue(ctx context.Context) (time.Time, bool, error) {
	if g.known {
		g.known = false
		return g.next, g.ok, nil
	}
	return g.store.NextDue(ctx, g.table)
}

// nothingDue is the transaction of a pass with nothing due: it claims and
// locks nothing, and has nothing to save.
type nothingDue struct{}

func (nothingDue) ClaimDue(context.Context, models.Table, time.Time, models.Cursor, int) ([]models.Row, error) {
	return nil, nil
}

func (nothingDue) SetPriorityOnce(_ context.Context, t models.Table, keys []string, _ *int) error {
	if len(keys) > 0 {
		return fmt.Errorf("set the priority of %d rows of %s: no transaction (nothing was due)", len(keys), t.Name)
	}
	return nil
}

func (nothingDue) LockByKeys(context.Context, models.Table, []string) (map[string]models.Row, error) {
	return map[string]models.Row{}, nil
}

func (nothingDue) Save(_ context.Context, t models.Table, rows []models.Row) error {
	if len(rows) > 0 {
		return fmt.Errorf("save %d rows of %s: no transaction (nothing was due)", len(rows), t.Name)
	}
	return nil
}

func (nothingDue) SaveSuccesses(_ context.Context, t models.Table, _ time.Time, rows []models.Success) ([]bool, error) {
	if len(rows) > 0 {
		return nil, fmt.Errorf("save %d successes of %s: no transaction (nothing was due)", len(rows), t.Name)
	}
	return nil, nil
}
