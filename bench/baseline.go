package main

import (
	"context"
	"database/sql"
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
// metrics).
//
// Dispatch, one transaction per batch: SELECT ... FOR UPDATE SKIP LOCKED,
// one bulk UPDATE, commit, one RPUSH of the batch's jobs.
// Apply: one LPOP with a count (after a BLPOP when the list is empty), one
// bulk UPDATE guarded by the attempt UID.
//
// Both bulk UPDATEs are the fastest form found for MariaDB: the per-row
// values (id and attempt UID) travel as one JSON array joined with
// JSON_TABLE, everything else is a constant argument. (UPDATE ... CASE id
// WHEN ... END compares every row with every WHEN: 1.5-2x slower at 1000
// rows.) Results are decoded with the service's own decoder, so the
// comparison is about the cycle, not JSON libraries.
type baseline struct {
	db    *sql.DB
	rdb   *redis.Client
	lists redisio.Lists
	batch int
	sched *schedule.Schedule
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
		n    int
		jobs []any
		last time.Time
		buf  = make([]byte, 0, 200*b.batch)
		doc  = append(make([]byte, 0, 40*b.batch), '[')
	)
	for rows.Next() {
		var id int64
		var url string
		var no int
		if err := rows.Scan(&id, &url, &no, &last); err != nil {
			rows.Close()
			return 0, time.Time{}, err
		}
		uid := xid.NewWithTime(now).String()
		if n > 0 {
			doc = append(doc, ',')
		}
		doc = fmt.Appendf(doc, `[%d,"%s"]`, id, uid)
		n++
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
	if n == 0 {
		return 0, time.Time{}, tx.Commit()
	}
	doc = append(doc, ']')
	const upd = "UPDATE " + benchTable + " AS t JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', u CHAR(20) PATH '$[1]')) AS j" +
		" ON t.id = j.id SET t.refresh_attempt_uid = j.u, t.refresh_attempt_no = t.refresh_attempt_no + 1," +
		" t.refresh_attempt_at = ?, t.refresh_timeout_at = ?, t.refresh_at = ?, t.refresh_status = NULL"
	if _, err := tx.ExecContext(ctx, upd, string(doc), now, timeoutAt, timeoutAt); err != nil {
		return 0, time.Time{}, err
	}
	if err := tx.Commit(); err != nil {
		return 0, time.Time{}, err
	}
	if err := b.rdb.RPush(ctx, b.lists.Input, jobs...).Err(); err != nil {
		return 0, time.Time{}, err
	}
	return n, last.UTC(), nil
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
	next := b.sched.Next(now)
	doc := append(make([]byte, 0, 48*len(msgs)), '[')
	n := 0
	for _, m := range msgs {
		r, err := redisio.DecodeResult([]byte(m))
		if err != nil || r.Type != redisio.ResultSuccess {
			continue // the benchmark's worker only sends successes
		}
		if _, err := strconv.ParseInt(r.UID, 10, 64); err != nil {
			continue
		}
		if n > 0 {
			doc = append(doc, ',')
		}
		doc = fmt.Appendf(doc, `[%s,%q]`, r.UID, r.AttemptUID)
		n++
	}
	if n == 0 {
		return nil
	}
	doc = append(doc, ']')
	const q = "UPDATE " + benchTable + " AS t JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', g CHAR(20) PATH '$[1]')) AS j" +
		" ON t.id = j.id AND t.refresh_attempt_uid = j.g SET t.refresh_attempt_uid = NULL, t.refresh_timeout_at = NULL," +
		" t.refresh_attempt_no = 0, t.refresh_failing_since = NULL, t.refresh_last_error = NULL," +
		" t.refresh_last_success_at = ?, t.refresh_at = ?"
	_, err := b.db.ExecContext(ctx, q, string(doc), now, next)
	return err
}
