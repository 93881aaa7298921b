package config

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkerSettings(t *testing.T) {
	t.Parallel()
	const kind = "kinds:\n  - name: big_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n"
	c, err := load(t, kind+"worker:\n  allow_private_networks: true\n  allow_networks: [10.1.0.0/16, \"10.2.3.4\", \"fd00:1::1/48\"]\n  max_body_bytes: 1000\n", nil)
	require.NoError(t, err)
	require.True(t, c.Worker.AllowPrivateNetworks)
	require.EqualValues(t, 1000, c.Worker.MaxBodyBytes)
	nets, err := c.Worker.Networks()
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.2.3.4/32"),
		netip.MustParsePrefix("fd00:1::/48")}, nets)

	c, err = load(t, kind, map[string]string{"REFRESHER_WORKER": "{allow_networks: [192.168.5.0/24]}"})
	require.NoError(t, err)
	require.Equal(t, []string{"192.168.5.0/24"}, c.Worker.AllowNetworks)

	for yaml, want := range map[string]string{
		"worker:\n  allow_networks: [10.1.0.0/33]\n": `worker.allow_networks: "10.1.0.0/33" is not a network in CIDR notation`,
		"worker:\n  allow_networks: [intranet]\n":    `worker.allow_networks: "intranet" is not a network in CIDR notation`,
		"worker:\n  max_body_bytes: -1\n":            "worker.max_body_bytes: must be positive",
		"worker:\n  allow_private: true\n":           `unknown key "allow_private" (known keys: allow_private_networks, allow_networks, max_body_bytes)`,
	} {
		_, err := load(t, kind+yaml, nil)
		require.ErrorContains(t, err, want)
	}
}
