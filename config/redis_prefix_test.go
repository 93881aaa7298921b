package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// redis_prefix starts the default list names (and so every key derived from
// them); lists a kind names are used as written; without it the names are
// today's.
func TestRedisPrefix(t *testing.T) {
	t.Parallel()
	const kinds = `
kinds:
  - {name: a, schedule: "RRULE:FREQ=DAILY"}
  - {name: b, schedule: "RRULE:FREQ=DAILY", input: jobs-b, output: results-b, dead: dead-b}
`
	c, err := load(t, "redis_prefix: \"shop:\"\n"+kinds, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"shop:a-input", "shop:a-output", "shop:a-dead"}, []string{c.Kinds[0].Input, c.Kinds[0].Output, c.Kinds[0].Dead})
	require.Equal(t, []string{"jobs-b", "results-b", "dead-b"}, []string{c.Kinds[1].Input, c.Kinds[1].Output, c.Kinds[1].Dead})

	c, err = load(t, kinds, map[string]string{"REFRESHER_REDIS_PREFIX": "blog:"})
	require.NoError(t, err)
	require.Equal(t, "blog:a-input", c.Kinds[0].Input)

	c, err = load(t, kinds, nil)
	require.NoError(t, err)
	require.Equal(t, "a-input", c.Kinds[0].Input, "no prefix: today's names")

	_, err = load(t, "redis_prefix: \"my shop:\"\n"+kinds, nil)
	require.ErrorContains(t, err, `redis_prefix: "my shop:" may not hold spaces`)
}

// An instance_id ending in ":ahead" would name another instance's ahead
// list (redisio.Lists.Ahead): refused with the reason.
func TestInstanceIDNotAnAheadList(t *testing.T) {
	t.Parallel()
	const kinds = "kinds:\n  - {name: a, schedule: \"RRULE:FREQ=DAILY\"}\n"
	_, err := load(t, "instance_id: web-1:ahead\n"+kinds, nil)
	require.ErrorContains(t, err, `instance_id: instance ID "web-1:ahead" ends in ":ahead", which names the ahead list of instance "web-1"`)
	_, err = load(t, "instance_id: web-1\n"+kinds, nil)
	require.NoError(t, err)
}
