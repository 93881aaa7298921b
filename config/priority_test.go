package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPriorities: the default levels, a kind's level and lanes, the
// environment, and what a bad level says.
func TestPriorities(t *testing.T) {
	t.Parallel()
	c, err := load(t, `
kinds:
  - {name: a, schedule: "RRULE:FREQ=DAILY"}
  - {name: b, schedule: "RRULE:FREQ=DAILY", priority: eventual}
  - {name: c, schedule: "RRULE:FREQ=DAILY", priority: interactive}
`, nil)
	require.NoError(t, err)
	svc := c.Service(nil)
	require.Equal(t, 10, svc.Kinds[0].Table.Priority, "default normal")
	require.Equal(t, []int{0}, svc.Kinds[0].Lanes)
	require.Equal(t, 20, svc.Kinds[1].Table.Priority)
	require.Equal(t, []int{0, 10}, svc.Kinds[1].Lanes)
	require.Empty(t, svc.Kinds[2].Lanes, "nothing is more urgent than interactive")
	require.Equal(t, 8, svc.ClaimConnections, "half the default 16 connections, handed out by priority")
	require.Equal(t, 2, c.Priorities["interactive"].AlertMaxAttempts)
	require.Equal(t, 150*time.Minute, c.Priorities["eventual"].AlertMaxAge.D())
	for in, want := range map[string]int{"interactive": 0, "eventual": 20, "-3": -3, "7": 7} {
		got, err := c.PriorityLevel(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err = c.PriorityLevel("urgent")
	require.ErrorContains(t, err, `priority "urgent" is neither a level of priorities: ([interactive normal eventual]) nor a number`)
	_, err = c.PriorityLevel("40000")
	require.ErrorContains(t, err, "out of range")

	c, err = load(t, `kinds: [{name: a, schedule: "RRULE:FREQ=DAILY", priority: urgent}]`,
		map[string]string{"REFRESHER_PRIORITIES": `{urgent: {level: -1, alert_max_attempts: 1, alert_max_age: 10s}, bulk: {level: 5, alert_max_attempts: 3, alert_max_age: 1h}}`})
	require.NoError(t, err)
	require.Equal(t, -1, c.Service(nil).Kinds[0].Table.Priority)
	require.Len(t, c.Priorities, 2, "a map given replaces the defaults")

	_, err = load(t, `
priorities:
  hot: {level: 40000, alert_max_attempts: 0}
kinds: [{name: a, schedule: "RRULE:FREQ=DAILY", priority: high}]
`, nil)
	require.ErrorContains(t, err, "priorities.hot.level: 40000 is out of range")
	require.ErrorContains(t, err, "priorities.hot.alert_max_attempts: 0 must be at least 1")
	require.ErrorContains(t, err, "priorities.hot.alert_max_age: 0s must be positive")
	require.ErrorContains(t, err, `kinds[0] (a).priority: "high" is not a level of priorities: [hot] (name one, or add it under priorities:)`)
}
