package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// Lease answers: written under "<output>:lease:<attempt_uid>" in order (the
// last answer of an attempt wins), read back by a worker's own client, and
// expiring a grace after what they say (by the caller's clock).
func TestWriteAndReadLeases(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	lists := DefaultLists(prefix + "items")
	now := time.Date(2020, 1, 1, 10, 0, 0, 0, time.UTC) // long past: the TTL must not use it as an instant

	require.NoError(t, c.WriteLeases(ctx, lists, []LeaseAnswer{
		{AttemptUID: "a1", Running: true, TimeoutAt: now.Add(10 * time.Minute)},
		{AttemptUID: "a1", Running: true, TimeoutAt: now.Add(20 * time.Minute), Capped: "max_timeout"},
		{AttemptUID: "a2", Running: false},
	}, now))

	raw := rdb.Get(ctx, prefix+"items-output:lease:a1").Val()
	require.Equal(t, `{"attempt_uid":"a1","running":true,"timeout_at":"2020-01-01T10:20:00.000000Z","capped":"max_timeout"}`, raw)
	require.Equal(t, `{"attempt_uid":"a2","running":false}`, rdb.Get(ctx, prefix+"items-output:lease:a2").Val())

	a, ok, err := ReadLease(ctx, rdb, lists, "a1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, LeaseAnswer{AttemptUID: "a1", Running: true, TimeoutAt: now.Add(20 * time.Minute), Capped: "max_timeout"}, a)
	a, ok, err = ReadLease(ctx, rdb, lists, "a2")
	require.NoError(t, err)
	require.Equal(t, LeaseAnswer{AttemptUID: "a2"}, a)
	require.True(t, ok)
	_, ok, err = ReadLease(ctx, rdb, lists, "a3")
	require.NoError(t, err)
	require.False(t, ok, "no answer yet")

	ttl := rdb.PTTL(ctx, lists.Lease("a1")).Val()
	require.True(t, ttl > 80*time.Minute-time.Second && ttl <= 80*time.Minute, "ttl %s", ttl)
	ttl = rdb.PTTL(ctx, lists.Lease("a2")).Val()
	require.True(t, ttl > LeaseAnswerGrace-time.Second && ttl <= LeaseAnswerGrace, "ttl %s", ttl)

	require.NoError(t, c.WriteLeases(ctx, lists, nil, now), "nothing to write: no round trip")
}

func TestParseLeaseAnswerErrors(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`nope`:                               `lease answer "nope": invalid character 'o' in literal null (expecting 'u')`,
		`{"running":true}`:                   `lease answer "{\"running\":true}": attempt_uid or running is missing`,
		`{"attempt_uid":"a","running":true}`: `lease answer "{\"attempt_uid\":\"a\",\"running\":true}": timeout_at: parsing time "" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse "" as "2006"`,
	} {
		_, err := ParseLeaseAnswer([]byte(raw))
		require.EqualError(t, err, want)
	}
}
