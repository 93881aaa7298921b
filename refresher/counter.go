package refresher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/refresher/refresher/models"
)

// CountedKind is what a Counter counts: a kind's table on its database.
type CountedKind struct {
	Name      string
	Table     models.Table
	LateAfter time.Duration // 0: models.DefaultLateAfter
	Inspector models.Inspector
}

// key names k among the counts a Counter keeps: the kind, its table and
// what the counts depend on besides the time (the late threshold and the
// kind's priority level, which Backlog always reports).
func (k CountedKind) key() string {
	return k.Name + "\x00" + k.Table.Name + "\x00" + strconv.Itoa(k.Table.Priority) + "\x00" + k.lateAfter().String()
}

func (k CountedKind) lateAfter() time.Duration {
	if k.LateAfter <= 0 {
		return models.DefaultLateAfter
	}
	return k.LateAfter
}

// KindCounts is one count of a kind's rows: its rows by state and its due
// rows by priority level, both as they were at At.
type KindCounts struct {
	At      time.Time
	Counts  models.Counts
	Backlog []models.LevelCount
}

// Counter is the one owner of the kinds' counts (Inspector.Counts and
// Backlog) in a process: the alert gauges and the dashboard's overview both
// ask it, so that a count one of them made is the other's while it is fresh
// enough for it, and concurrent requests for a kind's count share one
// count. Counting a large table is the most a gauge tick or a dashboard
// refresh costs the database; with the dashboard open (every 5 s) the
// gauges (every 15 s) then count nothing of their own.
//
// A Counter serves one deployment's kinds: a kind name, table and late
// threshold are counted on one database. It is safe for concurrent use;
// the zero value is not usable (NewCounter).
type Counter struct {
	mu sync.Mutex
	// flights are the counts running, by CountedKind.key and generation.
	flights map[string]*flight
	// last is each kind's newest count, by CountedKind.key.
	last map[string]KindCounts
	// gen is bumped by Forget: a count that began before it is not kept.
	gen uint64
}

// NewCounter returns a Counter with no counts yet.
func NewCounter() *Counter {
	return &Counter{last: map[string]KindCounts{}, flights: map[string]*flight{}}
}

// flight is a count running: its caller (the leader) counts with its own
// context and waits for it, so a count never outlives the one who started
// it (the gauges' Run returns only after its counts); others wait for done
// or their own context, whichever comes first. (singleflight's DoChan
// runs the count in a goroutine of its own, which a leader that gives up
// would leave running.)
type flight struct {
	done chan struct{}
	kc   KindCounts
	err  error
}

// Count returns k's counts made within maxAge before now: the last count
// when it is that fresh (and not after now), else a new one at now. A
// caller that asks while another's count of k runs waits for that count
// and shares it, until its own context ends. A count whose context ended
// while others waited does not fail them: one whose own context is still
// live counts again.
func (c *Counter) Count(ctx context.Context, k CountedKind, now time.Time, maxAge time.Duration) (KindCounts, error) {
	key := k.key()
	for try := 1; ; try++ {
		c.mu.Lock()
		last, ok := c.last[key]
		gen := c.gen
		c.mu.Unlock()
		if ok && !last.At.After(now) && now.Sub(last.At) < maxAge {
			return last, nil
		}
		// The flight's key has the generation: a Count after Forget does
		// not join a count that began before it.
		fk := key + "\x00" + strconv.FormatUint(gen, 10)
		c.mu.Lock()
		f, joined := c.flights[fk]
		if !joined {
			f = &flight{done: make(chan struct{})}
			c.flights[fk] = f
		}
		c.mu.Unlock()
		if joined {
			select {
			case <-f.done:
			case <-ctx.Done():
				return KindCounts{}, fmt.Errorf("count kind %s: %w", k.Name, ctx.Err())
			}
		} else {
			c.lead(ctx, f, k, now, fk, gen)
		}
		err := f.err
		if err == nil {
			return f.kc, nil
		}
		// The count was another caller's, and its context ended: count
		// again, a few times at most (an Inspector whose own timeout
		// reports a context error would otherwise loop until ctx ends).
		if ctx.Err() == nil && try < maxCountTries && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		return KindCounts{}, err
	}
}

// lead makes the count of flight f (named fk, begun at generation gen)
// and keeps it unless Forget came meanwhile. Its waiters are released
// however the count ends: a panic in it gives them an error, and goes on
// up the leader's goroutine.
func (c *Counter) lead(ctx context.Context, f *flight, k CountedKind, now time.Time, fk string, gen uint64) {
	f.err = fmt.Errorf("count kind %s: the count panicked", k.Name)
	defer func() {
		c.mu.Lock()
		delete(c.flights, fk)
		if key := k.key(); f.err == nil && c.gen == gen {
			if prev, ok := c.last[key]; !ok || !prev.At.After(f.kc.At) {
				c.last[key] = f.kc
			}
		}
		c.mu.Unlock()
		close(f.done)
	}()
	f.kc, f.err = count(ctx, k, now)
}

// maxCountTries bounds how often Count counts again after a shared count
// failed with a context error that was not its caller's.
const maxCountTries = 3

// Forget drops every kind's count; a count that runs now goes to its
// callers only (it is not kept, and no later Count joins it). After an
// operator's action the next Count counts afresh, so that the action shows.
func (c *Counter) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.last)
}

// count counts k's rows at now.
func count(ctx context.Context, k CountedKind, now time.Time) (KindCounts, error) {
	if k.Inspector == nil {
		return KindCounts{}, errors.New("count kind " + k.Name + ": no Inspector")
	}
	counts, err := k.Inspector.Counts(ctx, k.Table, now, k.lateAfter())
	if err != nil {
		return KindCounts{}, err
	}
	// The due rows counted just now, when counted exactly, are the kind's
	// level of the backlog unless rows have priorities of their own: not
	// read a second time.
	var due *int64
	if !slices.Contains(counts.Estimated, models.StateDue) {
		due = &counts.Due
	}
	backlog, err := k.Inspector.Backlog(ctx, k.Table, now, due)
	if err != nil {
		return KindCounts{}, err
	}
	return KindCounts{At: now, Counts: counts, Backlog: backlog}, nil
}
