package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// On a Redis Cluster the default lists are tagged with the kind's name (and
// prefix), so every key of a kind is in one slot; lists a kind names must
// share one tag, else the configuration is refused with how to fix it. On
// one server and on Sentinel the names stay today's.
func TestRedisClusterLists(t *testing.T) {
	t.Parallel()
	const kinds = `
kinds:
  - {name: a, schedule: "RRULE:FREQ=DAILY"}
  - {name: b, schedule: "RRULE:FREQ=DAILY", input: "{b}-jobs", output: "{b}-results", dead: "{b}-dead"}
`
	c, err := load(t, "redis: redis+cluster://h1:7000,h2:7001\nredis_prefix: \"shop:\"\n"+kinds, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"{shop:a}-input", "{shop:a}-output", "{shop:a}-dead"}, []string{c.Kinds[0].Input, c.Kinds[0].Output, c.Kinds[0].Dead})
	require.Equal(t, "{b}-jobs", c.Kinds[1].Input)

	c, err = load(t, kinds, map[string]string{"REFRESHER_REDIS": "redis+cluster://u:p@h1:7000"})
	require.NoError(t, err)
	require.Equal(t, "{a}-input", c.Kinds[0].Input, "REFRESHER_REDIS names the cluster")

	c, err = load(t, "redis: redis+sentinel://s1:26379/mymaster\n"+kinds, nil)
	require.NoError(t, err)
	require.Equal(t, "a-input", c.Kinds[0].Input, "Sentinel: today's names")

	_, err = load(t, `
redis: redis+cluster://h1:7000
kinds:
  - {name: c, schedule: "RRULE:FREQ=DAILY", input: c-in, output: "{c}-out", dead: "{x}-dead"}
`, nil)
	require.ErrorContains(t, err, `kinds[0] (c): on a Redis Cluster a kind's lists must share one hash tag`)
	require.ErrorContains(t, err, `input "c-in" (no tag), output "{c}-out" (tag {c}) and dead "{x}-dead" (tag {x})`)
	require.ErrorContains(t, err, `"{big_tables}-input"`)

	_, err = load(t, "redis: redis://127.0.0.1:6379/0\n"+`
kinds:
  - {name: c, schedule: "RRULE:FREQ=DAILY", input: c-in, output: "{c}-out", dead: "{x}-dead"}
`, nil)
	require.NoError(t, err, "one server needs no tags")
}
