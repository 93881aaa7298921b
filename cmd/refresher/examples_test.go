package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/config"
)

// The comment on the retry line of examples/refresher.yml says after how
// many failures in a row the row is disabled; `refresher explain` agrees.
func TestExampleRetryComment(t *testing.T) {
	t.Parallel()
	const path = "../../examples/refresher.yml"
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s+retry:.*#.*?(\d+)(?:st|nd|rd|th)? failures? in a row`).FindSubmatch(raw)
	require.NotNil(t, m, "the retry line of %s says after how many failures the row is disabled", path)
	said, _ := strconv.Atoi(string(m[1]))

	c, err := config.Load(path)
	require.NoError(t, err)
	k := c.Kinds[0]
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"explain", "--schedule", k.Schedule, "--retry", k.Retry,
		"--timeout", k.Timeout.D().String(), "--from", "2026-01-01T00:00:30Z", "--fail", "50"}, &out, &out))
	m = regexp.MustCompile(`stopped after (\d+) attempt\(s\): the model would be disabled`).FindSubmatch(out.Bytes())
	require.NotNil(t, m, "explain disables the row:\n%s", out.String())
	explained, _ := strconv.Atoi(string(m[1]))
	require.Equal(t, explained, said, "the comment says the row is disabled at failure %d, explain at %d", said, explained)
}
