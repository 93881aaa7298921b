package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/xid"

	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// baseline is the minimal hand-written cycle the service is measured
// against: what the machine can do with the same database, Redis, batch
// size and cursor trick, without the service's generality (any key type,
// per-row schedules and transitions, all 11 state columns written, a
// reliable drain with a processing list and an atomic ack, dead letters,
// metrics). Its SQL is the store's (baselineDB, one file per store); these
// loops and the Redis side are shared.
//
// Dispatch, one transaction per batch: claim the due rows (SELECT ... FOR
// UPDATE SKIP LOCKED, or under SQLite's BEGIN IMMEDIATE), one bulk UPDATE,
// commit, one RPUSH of the batch's jobs.
// Apply: one LPOP with a count (after a BLPOP when the list is empty), one
// bulk UPDATE guarded by the attempt UID. Results are decoded with the
// service's own decoder, so the comparison is about the cycle, not JSON
// libraries.
type baseline struct {
	db    baselineDB
	rdb   *redis.Client
	lists redisio.Lists
	batch int
	sched *schedule.Schedule
	rep   *reporter
}

const baselineTimeout = time.Hour

func newAttemptUID(now time.Time) string { return xid.NewWithTime(now).String() }

func (b *baseline) run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { b.dispatchLoop(ctx) })
	wg.Go(func() { b.applyLoop(ctx) })
	wg.Wait()
	return nil
}

func (b *baseline) fail(ctx context.Context, what string, err error) {
	fmt.Fprintf(os.Stderr, "baseline %s: %v\n", what, err)
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

func (b *baseline) dispatchLoop(ctx context.Context) {
	var cursor, cursorSince time.Time
	for ctx.Err() == nil {
		now := time.Now().UTC().Truncate(time.Microsecond)
		if !cursor.IsZero() && now.Sub(cursorSince) > 5*time.Second {
			cursor = time.Time{}
		}
		n, last, err := b.dispatchOnce(context.WithoutCancel(ctx), now, cursor)
		if err != nil {
			b.fail(ctx, "dispatch", err)
			continue
		}
		if n > 0 {
			b.rep.line("D", n)
		}
		if n == b.batch {
			if cursor.IsZero() {
				cursorSince = now
			}
			cursor = last
			continue
		}
		cursor = time.Time{}
		// Sleep until the earliest refresh_at, at most 1s.
		wait := time.Second
		if next, ok, err := b.db.nextDue(ctx); err == nil && ok {
			wait = min(max(time.Until(next), 0), time.Second)
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

func (b *baseline) dispatchOnce(ctx context.Context, now, cursor time.Time) (int, time.Time, error) {
	timeoutAt := now.Add(baselineTimeout)
	rows, last, err := b.db.claim(ctx, now, cursor, timeoutAt, b.batch)
	if err != nil || len(rows) == 0 {
		return 0, time.Time{}, err
	}
	buf := make([]byte, 0, 200*len(rows))
	jobs := make([]any, 0, len(rows))
	for _, r := range rows {
		start := len(buf)
		buf, err = redisio.AppendJob(buf, redisio.Job{
			Kind: benchTable, UID: strconv.FormatInt(r.id, 10), AttemptUID: r.uid, AttemptNo: r.attemptNo,
			TimeoutAt: timeoutAt, Payload: map[string]any{"input_url": r.url},
		})
		if err != nil {
			return 0, time.Time{}, err
		}
		jobs = append(jobs, buf[start:len(buf):len(buf)])
	}
	if err := b.rdb.RPush(ctx, b.lists.Input, jobs...).Err(); err != nil {
		return 0, time.Time{}, err
	}
	return len(rows), last, nil
}

func (b *baseline) applyLoop(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := b.rdb.LPopCount(ctx, b.lists.Output, b.batch).Result()
		if errors.Is(err, redis.Nil) || (err == nil && len(msgs) == 0) {
			first, err := b.rdb.BLPop(ctx, time.Second, b.lists.Output).Result()
			if err != nil {
				if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
					b.fail(ctx, "wait for results", err)
				}
				continue
			}
			msgs = []string{first[1]}
			if more, err := b.rdb.LPopCount(ctx, b.lists.Output, b.batch-1).Result(); err == nil {
				msgs = append(msgs, more...)
			}
		} else if err != nil {
			if ctx.Err() == nil {
				b.fail(ctx, "fetch results", err)
			}
			continue
		}
		for {
			err := b.applyOnce(context.WithoutCancel(ctx), msgs)
			if err == nil {
				break
			}
			b.fail(ctx, "apply", err)
			if ctx.Err() != nil {
				return
			}
		}
		b.rep.line("A", len(msgs))
	}
}

func (b *baseline) applyOnce(ctx context.Context, msgs []string) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	done := make([]finished, 0, len(msgs))
	for _, m := range msgs {
		r, err := redisio.DecodeResult([]byte(m))
		if err != nil || r.Type != redisio.ResultSuccess {
			continue // the benchmark's worker only sends successes
		}
		id, err := strconv.ParseInt(r.UID, 10, 64)
		if err != nil {
			continue
		}
		done = append(done, finished{id: id, uid: r.AttemptUID})
	}
	if len(done) == 0 {
		return nil
	}
	return b.db.finish(ctx, now, b.sched.Next(now), done)
}
