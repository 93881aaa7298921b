package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/xid"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// baseline is the minimal hand-written cycle the service is measured
// against: what the machine can do with the same database, Redis, batch
// size and cursor trick, without the service's generality (any key type,
// per-row schedules and transitions, all 11 state columns written, a
// reliable drain with a processing list and an atomic ack, dead letters,
// metrics).
//
// Dispatch, one transaction per batch: SELECT ... FOR UPDATE SKIP LOCKED,
// one bulk UPDATE, commit, one RPUSH of the batch's jobs.
// Apply: one LPOP with a count (after a BLPOP when the list is empty), one
// bulk UPDATE guarded by the attempt UID.
type baseline struct {
	db    *sql.DB
	rdb   *redis.Client
	lists redisio.Lists
	batch int
	sched *policy.Schedule
	rep   *reporter
}

const baselineTimeout = time.Hour

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
		var next sql.NullTime
		wait := time.Second
		if err := b.db.QueryRowContext(ctx, "SELECT MIN(refresh_at) FROM "+benchTable).Scan(&next); err == nil && next.Valid {
			wait = min(max(time.Until(next.Time), 0), time.Second)
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
	tx, err := b.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, time.Time{}, err
	}
	defer tx.Rollback()
	q := "SELECT id, input_url, refresh_attempt_no, refresh_at FROM " + benchTable + " FORCE INDEX (idx_refresh_at) WHERE refresh_at <= ?"
	args := []any{now}
	if !cursor.IsZero() {
		q += " AND refresh_at >= ?"
		args = append(args, cursor)
	}
	q += " ORDER BY refresh_at LIMIT " + strconv.Itoa(b.batch) + " FOR UPDATE SKIP LOCKED"
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, time.Time{}, err
	}
	timeoutAt := now.Add(baselineTimeout)
	var (
		ids  []int64
		jobs []any
		upd  strings.Builder
		uarg []any
		last time.Time
		buf  = make([]byte, 0, 200*b.batch)
	)
	upd.WriteString("UPDATE " + benchTable + " SET refresh_attempt_uid = CASE id")
	for rows.Next() {
		var id int64
		var url string
		var no int
		if err := rows.Scan(&id, &url, &no, &last); err != nil {
			rows.Close()
			return 0, time.Time{}, err
		}
		uid := xid.NewWithTime(now).String()
		ids = append(ids, id)
		upd.WriteString(" WHEN ? THEN ?")
		uarg = append(uarg, id, uid)
		start := len(buf)
		buf, err = redisio.AppendJob(buf, redisio.Job{
			Kind: benchTable, UID: strconv.FormatInt(id, 10), AttemptUID: uid, AttemptNo: no + 1,
			TimeoutAt: timeoutAt, Payload: map[string]any{"input_url": url},
		})
		if err != nil {
			rows.Close()
			return 0, time.Time{}, err
		}
		jobs = append(jobs, buf[start:len(buf):len(buf)])
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, time.Time{}, err
	}
	if len(ids) == 0 {
		return 0, time.Time{}, tx.Commit()
	}
	upd.WriteString(" END, refresh_attempt_no = refresh_attempt_no + 1, refresh_attempt_at = ?," +
		" refresh_timeout_at = ?, refresh_at = ?, refresh_status = NULL WHERE id IN (")
	uarg = append(uarg, now, timeoutAt, timeoutAt)
	for i, id := range ids {
		if i > 0 {
			upd.WriteByte(',')
		}
		upd.WriteByte('?')
		uarg = append(uarg, id)
	}
	upd.WriteByte(')')
	if _, err := tx.ExecContext(ctx, upd.String(), uarg...); err != nil {
		return 0, time.Time{}, err
	}
	if err := tx.Commit(); err != nil {
		return 0, time.Time{}, err
	}
	if err := b.rdb.RPush(ctx, b.lists.Input, jobs...).Err(); err != nil {
		return 0, time.Time{}, err
	}
	return len(ids), last.UTC(), nil
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
			b.fail(ctx, "fetch results", err)
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
	next := b.sched.Next(now)
	var q strings.Builder
	q.WriteString("UPDATE " + benchTable + " SET refresh_attempt_uid = NULL, refresh_timeout_at = NULL," +
		" refresh_attempt_no = 0, refresh_failing_since = NULL, refresh_last_error = NULL," +
		" refresh_last_success_at = ?, refresh_at = ? WHERE id IN (")
	args := []any{now, next}
	guard := make([]any, 0, 2*len(msgs))
	for _, m := range msgs {
		var r redisio.Result
		if err := json.Unmarshal([]byte(m), &r); err != nil || r.Type != redisio.ResultSuccess {
			continue // the benchmark's worker only sends successes
		}
		if len(guard) > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('?')
		args = append(args, r.UID)
		guard = append(guard, r.UID, r.AttemptUID)
	}
	if len(guard) == 0 {
		return nil
	}
	q.WriteString(") AND refresh_attempt_uid = CASE id")
	for range len(guard) / 2 {
		q.WriteString(" WHEN ? THEN ?")
	}
	q.WriteString(" END")
	_, err := b.db.ExecContext(ctx, q.String(), append(args, guard...)...)
	return err
}
