package redisio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/jsontext"
)

// LeaseAnswerGrace is how long a lease answer outlives what it says: an
// answer for a running attempt expires this long after its timeout_at, one
// for an attempt that is over this long after it was written.
const LeaseAnswerGrace = time.Hour

// LeaseAnswer is the service's answer to a request for more time (a result
// with "seconds", see docs/protocol.md, "Leases"), written once the request
// is applied to Lists.Lease(AttemptUID), as JSON:
//
//	{"attempt_uid":"d4n0q4a5n1p0bb6b6h20","running":true,"timeout_at":"2026-11-21T16:00:00.000000Z","capped":"max_timeout"}
//	{"attempt_uid":"d4n0q4a5n1p0bb6b6h20","running":false}
//
// Each answer replaces the attempt's last one.
type LeaseAnswer struct {
	AttemptUID string
	// Running: the attempt runs and times out at TimeoutAt. False: it is
	// over (it ended, timed out, or the row was enabled again): whatever
	// the worker still sends for it is stale.
	Running   bool
	TimeoutAt time.Time
	// Capped names what held TimeoutAt below what was asked
	// ("max_timeout", "next_occurrence"); "" when nothing did.
	Capped string
}

// AppendJSON appends the answer's JSON (see LeaseAnswer) to b.
func (a LeaseAnswer) AppendJSON(b []byte) []byte {
	b = append(b, `{"attempt_uid":`...)
	b = jsontext.AppendString(b, a.AttemptUID)
	b = append(b, `,"running":`...)
	b = strconv.AppendBool(b, a.Running)
	if a.Running {
		b = append(b, `,"timeout_at":"`...)
		b = a.TimeoutAt.UTC().AppendFormat(b, TimeoutAtLayout)
		b = append(b, '"')
		if a.Capped != "" {
			b = append(b, `,"capped":`...)
			b = jsontext.AppendString(b, a.Capped)
		}
	}
	return append(b, '}')
}

// WriteLeases writes answers, in order (a later answer for the same attempt
// replaces an earlier one), to their keys under lists in one round trip.
// now is the caller's clock: a running attempt's answer expires
// LeaseAnswerGrace after its timeout_at, any other LeaseAnswerGrace after
// now.
func (c *Client) WriteLeases(ctx context.Context, lists Lists, answers []LeaseAnswer, now time.Time) error {
	if len(answers) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	var buf []byte
	for _, a := range answers {
		ttl := LeaseAnswerGrace
		if a.Running {
			ttl = max(a.TimeoutAt.Sub(now), 0) + LeaseAnswerGrace
		}
		buf = a.AppendJSON(buf[:0])
		pipe.Set(ctx, lists.Lease(a.AttemptUID), string(buf), ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("write %d lease answers under %s: %w", len(answers), lists.Output, err)
	}
	return nil
}

// ReadLease returns the answer stored for attemptUID under lists, read
// with rdb (a worker's own client); ok is false when there is none (no
// request applied yet, or it expired).
func ReadLease(ctx context.Context, rdb redis.Cmdable, lists Lists, attemptUID string) (a LeaseAnswer, ok bool, err error) {
	raw, err := rdb.Get(ctx, lists.Lease(attemptUID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return LeaseAnswer{}, false, nil
	}
	if err != nil {
		return LeaseAnswer{}, false, fmt.Errorf("read the lease answer of attempt %s: %w", attemptUID, err)
	}
	if a, err = ParseLeaseAnswer(raw); err != nil {
		return LeaseAnswer{}, false, err
	}
	return a, true, nil
}

// ParseLeaseAnswer decodes the JSON of a lease answer (see LeaseAnswer).
func ParseLeaseAnswer(raw []byte) (LeaseAnswer, error) {
	var w struct {
		AttemptUID string `json:"attempt_uid"`
		Running    *bool  `json:"running"`
		TimeoutAt  string `json:"timeout_at"`
		Capped     string `json:"capped"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return LeaseAnswer{}, fmt.Errorf("lease answer %.200q: %w", raw, err)
	}
	if w.AttemptUID == "" || w.Running == nil {
		return LeaseAnswer{}, fmt.Errorf("lease answer %.200q: attempt_uid or running is missing", raw)
	}
	a := LeaseAnswer{AttemptUID: w.AttemptUID, Running: *w.Running, Capped: w.Capped}
	if a.Running {
		t, err := time.Parse(time.RFC3339Nano, w.TimeoutAt)
		if err != nil {
			return LeaseAnswer{}, fmt.Errorf("lease answer %.200q: timeout_at: %w", raw, err)
		}
		a.TimeoutAt = t.UTC()
	}
	return a, nil
}
