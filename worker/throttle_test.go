package worker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// With the kind's throttle_group, a 429 names its group (throttle_key) so
// the service holds it; a job of a held group is answered as throttled
// ("scope":"group") without a request; other groups are fetched as usual.
func TestWorkerThrottleGroup(t *testing.T) {
	t.Parallel()
	srv, requests := testServer(t)
	rdb, prefix := testenv.Redis(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	w, err := New(Config{Kind: prefix + "k", Redis: rdb, ThrottleGroup: "host", AllowPrivateNetworks: true,
		HTTPTimeout: time.Second, Now: func() time.Time { return now }, Logger: quietLogger()})
	require.NoError(t, err)
	job := func(uid, path, host string) redisio.Job {
		return redisio.Job{Kind: "k", UID: uid, AttemptUID: "a-" + uid, AttemptNo: 1, TimeoutAt: now.Add(time.Minute),
			Payload: map[string]any{"input_url": srv.URL + path, "host": host}}
	}

	res, ok := w.Process(t.Context(), job("a1", "/status/429?retry_after=120", "api-a"))
	require.True(t, ok)
	require.Equal(t, "api-a", res.ThrottleKey, "a 429 names its group")
	require.Equal(t, 120, res.RetryAfterSeconds)
	require.Empty(t, res.Scope, "the row that got the 429 fails as usual")

	// The service holds the group (what the poller does with that result).
	require.NoError(t, redisio.New(rdb).Hold(t.Context(), prefix+"k-input:throttle", "api-a", now.Add(2*time.Minute), now))
	before := requests.Load()
	res, ok = w.Process(t.Context(), job("a2", "/ok", "api-a"))
	require.True(t, ok)
	require.Equal(t, redisio.ScopeGroup, res.Scope, "a queued job of a held group is answered as throttled")
	require.Equal(t, redisio.ResultFailure, res.Type)
	require.Equal(t, 120, res.RetryAfterSeconds)
	require.Equal(t, before, requests.Load(), "no request for a held group")

	res, ok = w.Process(t.Context(), job("b1", "/ok", "api-b"))
	require.True(t, ok)
	require.Equal(t, redisio.ResultSuccess, res.Type, "another group is fetched")
	require.Equal(t, before+1, requests.Load())
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	_, err = redisio.DecodeResult(raw)
	require.NoError(t, err, "the result decodes as the service reads it")
}
