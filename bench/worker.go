package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// popBatch is how many jobs a worker goroutine takes per round trip: one
// BLPOP, then LPOP with a count for the rest (PERF-NOTES: popping one job
// per round trip costs the worker more CPU than the service).
const popBatch = 100

// workerPool answers every job with success as fast as it can. In hold mode
// it keeps the results instead of pushing them, so that dispatch and apply
// can be timed separately.
type workerPool struct {
	rdb           *redis.Client
	input, output string
	plan          *plan // refresh_at of each job's row, for lateness
	// lanes are popped before input, in order (--priority).
	lanes []string
	// watched maps the uid of a triggered row to when its trigger
	// committed; a pop of its job records the wait in received.
	watched  sync.Map // string -> time.Time
	received sync.Map // string -> time.Duration

	hold   atomic.Bool
	popped atomic.Int64

	mu       sync.Mutex
	held     []any
	lateness []time.Duration
	lastPop  time.Time
}

// run starts n goroutines and returns a function that stops and waits for
// them.
func (w *workerPool) run(ctx context.Context, n int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { w.loop(ctx) })
	}
	return func() { cancel(); wg.Wait() }
}

func (w *workerPool) loop(ctx context.Context) {
	var lat []time.Duration
	results := make([]any, 0, popBatch)
	defer func() {
		w.mu.Lock()
		w.lateness = append(w.lateness, lat...)
		w.mu.Unlock()
	}()
	keys := append(slices.Clone(w.lanes), w.input)
	for ctx.Err() == nil {
		first, err := w.rdb.BLPop(ctx, time.Second, keys...).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		jobs := []string{first[1]}
		more, err := w.rdb.LPopCount(ctx, first[0], popBatch-1).Result()
		if err == nil {
			jobs = append(jobs, more...)
		}
		now := time.Now()
		results = results[:0]
		for _, j := range jobs {
			uid, attempt := jobIDs([]byte(j))
			if at, ok := w.watched.LoadAndDelete(uid); ok {
				w.received.Store(uid, now.Sub(at.(time.Time)))
			}
			if id, err := strconv.ParseInt(uid, 10, 64); err == nil {
				if at, ok := w.plan.refreshAt(id); ok {
					lat = append(lat, now.Sub(at))
				}
			}
			results = append(results, successResult(uid, attempt))
		}
		w.popped.Add(int64(len(jobs)))
		// hold is read under mu, where release turns it off and takes
		// held: a batch is either in what release pushes or pushed here.
		w.mu.Lock()
		w.lastPop = now
		if w.hold.Load() {
			w.held = append(w.held, results...)
			w.mu.Unlock()
			continue
		}
		w.mu.Unlock()
		for ctx.Err() == nil {
			if err := w.rdb.RPush(ctx, w.output, results...).Err(); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// release pushes the held results in batches of n and leaves hold mode.
func (w *workerPool) release(ctx context.Context, n int) error {
	w.mu.Lock()
	held := w.held
	w.held = nil
	w.hold.Store(false)
	w.mu.Unlock()
	pipe := w.rdb.Pipeline()
	for start := 0; start < len(held); start += n {
		pipe.RPush(ctx, w.output, held[start:min(start+n, len(held))]...)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// takeLateness returns and clears the lateness samples gathered so far
// (goroutines hand theirs over when they stop).
func (w *workerPool) takeLateness() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lateness
	w.lateness = nil
	return l
}

// jobIDs extracts uid and attempt_uid from a job as the service encodes it
// (docs/protocol.md), falling back to encoding/json for anything unexpected.
func jobIDs(b []byte) (uid, attempt string) {
	uid, ok1 := stringField(b, `"uid":"`)
	attempt, ok2 := stringField(b, `"attempt_uid":"`)
	if ok1 && ok2 {
		return uid, attempt
	}
	var j struct {
		UID        string `json:"uid"`
		AttemptUID string `json:"attempt_uid"`
	}
	_ = json.Unmarshal(b, &j)
	return j.UID, j.AttemptUID
}

// stringField returns the value of a string field without escapes.
func stringField(b []byte, prefix string) (string, bool) {
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		return "", false
	}
	rest := b[i+len(prefix):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return "", false
	}
	return string(rest[:j]), true
}

func successResult(uid, attempt string) []byte {
	b := make([]byte, 0, 80)
	b = append(b, `{"uid":"`...)
	b = append(b, uid...)
	b = append(b, `","attempt_uid":"`...)
	b = append(b, attempt...)
	return append(b, `","type":"success"}`...)
}
