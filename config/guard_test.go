package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
)

const guardYAML = `
kinds:
  - name: feeds
    payload: [input_url, host]
    schedule: "RRULE:FREQ=DAILY"
    throttle_group: host
    incident_threshold: 0.5
    incident_min_results: 10
    incident_window: 2m
    incident_retry: 30s
  - name: quiet
    schedule: "RRULE:FREQ=DAILY"
    incident_guard: false
`

func TestThrottleAndIncidentKeys(t *testing.T) {
	t.Parallel()
	c, err := load(t, guardYAML, nil)
	require.NoError(t, err)
	require.Equal(t, "host", c.Kinds[0].ThrottleGroup)
	require.Equal(t, policy.Guard{Threshold: 0.5, MinResults: 10, Window: 2 * time.Minute, Retry: 30 * time.Second}, c.Kinds[0].Guard())
	require.Equal(t, policy.Guard{Off: true}, c.Kinds[1].Guard())

	_, err = load(t, `
kinds:
  - name: feeds
    payload: [input_url]
    schedule: "RRULE:FREQ=DAILY"
    throttle_group: host
    incident_threshold: 1.5
    incident_window: 0s
`, nil)
	require.ErrorContains(t, err, `kinds[0] (feeds).throttle_group: "host" is not a payload column (add it to payload, e.g. payload: [input_url, host]`)
	require.ErrorContains(t, err, "kinds[0] (feeds).incident_window, incident_retry: 0s is not allowed")

	_, err = load(t, `
kinds:
  - name: feeds
    schedule: "RRULE:FREQ=DAILY"
    incident_threshold: 1.5
`, nil)
	require.ErrorContains(t, err, "kinds[0] (feeds): incident threshold 1.5 is out of range (use a share above 0 and at most 1, e.g. 0.8) (keys incident_threshold")
}
