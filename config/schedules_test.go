package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
)

// spread, spread_own_rules, catchup_window and misfire: their defaults,
// what the policy gets, and each bad value's message.
func TestSchedulePolicyKeys(t *testing.T) {
	t.Parallel()
	kind := func(extra string) string {
		return "kinds:\n  - name: feeds\n    schedule: \"RRULE:FREQ=DAILY\"\n" + extra
	}
	c, err := load(t, kind(""), nil)
	require.NoError(t, err)
	require.Equal(t, policy.Spread{}, c.Kinds[0].SpreadPolicy(), "no spreading by default")
	require.Equal(t, policy.Catchup{Misfire: policy.MisfireSkip}, c.Kinds[0].CatchupPolicy(), "unlimited window by default")

	c, err = load(t, kind("    spread: 10m\n    catchup_window: 1h\n"), nil)
	require.NoError(t, err)
	require.Equal(t, policy.Spread{Window: 10 * time.Minute}, c.Kinds[0].SpreadPolicy(), "own rules spread by default")
	require.Equal(t, policy.Catchup{Window: time.Hour, Misfire: policy.MisfireSkip}, c.Kinds[0].CatchupPolicy())

	c, err = load(t, kind("    spread: 10m\n    spread_own_rules: false\n    catchup_window: 2h\n    misfire: run_once\n"), nil)
	require.NoError(t, err)
	require.Equal(t, policy.Spread{Window: 10 * time.Minute, SkipOwnRules: true}, c.Kinds[0].SpreadPolicy())
	require.Equal(t, policy.Catchup{Window: 2 * time.Hour, Misfire: policy.MisfireRunOnce}, c.Kinds[0].CatchupPolicy())

	for name, tt := range map[string]struct{ yaml, want string }{
		"zero spread":        {kind("    spread: 0s\n"), "kinds[0] (feeds).spread: 0s is not allowed: leave it out for no spreading"},
		"short spread":       {kind("    spread: 1s\n"), "kinds[0] (feeds).spread: 1s is too short to spread anything"},
		"negative spread":    {kind("    spread: -1m\n"), "kinds[0] (feeds).spread: -1m0s is too short"},
		"own rules alone":    {kind("    spread_own_rules: false\n"), "kinds[0] (feeds).spread_own_rules: set without spread"},
		"zero catchup":       {kind("    catchup_window: 0s\n"), "kinds[0] (feeds).catchup_window: 0s is not allowed: leave it out for unlimited"},
		"negative catchup":   {kind("    catchup_window: -1h\n"), "kinds[0] (feeds).catchup_window: -1h0m0s is not allowed"},
		"bad misfire":        {kind("    catchup_window: 1h\n    misfire: catch_up\n"), `kinds[0] (feeds).misfire: "catch_up" is not a misfire setting (use skip, the default, or run_once)`},
		"misfire, no window": {kind("    misfire: run_once\n"), "kinds[0] (feeds).misfire: run_once has no effect without catchup_window"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tt.yaml, nil)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
