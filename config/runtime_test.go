package config

import (
	"time"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/redisio"
)

// TestRuntimeKinds: the service, the operator surface and the gauges get
// each kind alike, with every configured key (the operator's copy of the
// policy once left out permanent_reason).
func TestRuntimeKinds(t *testing.T) {
	t.Parallel()
	c, err := load(t, `
kinds:
  - name: reports
    key: uid
    payload: [url, host]
    throttle_group: host
    schedule: "RRULE:FREQ=HOURLY"
    timeout: 2m
    max_timeout: 20m
    retry: "delays:0s,5m"
    disabled_reason: "Cannot refresh {kind} after {attempts} tries"
    permanent_reason: "This {kind} was rejected by its source"
    max_retry_after: 2h
    spread: 10m
    catchup_window: 1h
    misfire: run_once
    incident_threshold: 0.5
    late_after: 5m
    priority: interactive
    max_dead: 7
  - name: pages
    schedule: "RRULE:FREQ=DAILY"
`, nil)
	require.NoError(t, err)
	svc := c.Service(nil)
	require.Len(t, svc.Kinds, 2)
	for i := range c.Kinds {
		k := &c.Kinds[i]
		s, o, g := svc.Kinds[i], k.Operator(), k.Gauge()
		require.Equal(t, s.Policy, o.Policy, k.Name)
		require.Equal(t, s.Lists, o.Lists, k.Name)
		require.Equal(t, s.Lists, g.Lists, k.Name)
		require.Equal(t, s.Table, o.Table, k.Name)
		require.Equal(t, s.Table, g.Table, k.Name)
		require.Same(t, s.Schedule, o.Schedule, k.Name)
		require.Equal(t, s.ThrottleGroup, o.ThrottleGroup, k.Name)
		require.Equal(t, o.LateAfter, g.LateAfter, k.Name)
		require.Equal(t, o.Priority, g.Priority, k.Name)
	}
	p := svc.Kinds[0].Policy
	require.Equal(t, "reports", p.Kind)
	require.Equal(t, "This {kind} was rejected by its source", p.PermanentReason)
	require.Equal(t, "Cannot refresh {kind} after {attempts} tries", p.DisabledReason)
	require.Equal(t, "2h0m0s", p.MaxRetryAfter.String())
	require.Equal(t, "2m0s", p.Timeout.String())
	require.Equal(t, "20m0s", p.MaxTimeout.String())
	require.Equal(t, 4*time.Hour, svc.Kinds[1].Policy.WithDefaults().MaxTimeout, "4 times the default timeout")
	require.Equal(t, 0.5, p.Guard.Threshold)
	require.Equal(t, "1h0m0s", p.Catchup.Window.String())
	require.Equal(t, "10m0s", p.Spread.Window.String())
	require.Same(t, c.Kinds[0].RetryParsed, p.Retry)
	require.Equal(t, redisio.Lists{Input: "reports-input", Output: "reports-output", Dead: "reports-dead", MaxDead: 7,
		MaxResultBytes: redisio.DefaultMaxResultBytes}, svc.Kinds[0].Lists)
	require.Equal(t, redisio.DefaultLists("pages").Input, svc.Kinds[1].Lists.Input)
	require.Equal(t, "uid", svc.Kinds[0].Table.Key)
	require.Equal(t, []string{"url", "host"}, svc.Kinds[0].Table.Payload)
	require.Equal(t, "host", svc.Kinds[0].ThrottleGroup)
	require.Equal(t, c.InstanceID, svc.InstanceID)
	require.Equal(t, c.BatchSize, svc.BatchSize)
}
