package kubernetes

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/worker"
)

// drainSteps is how many steps of the service's drain (refresher/service.go,
// "Shutdown") are each bounded by its operation timeout, one after the
// other, at worst: the dispatcher's batch in hand and its undo, then the
// poller's batch in hand, the give-back of the batch it fetched ahead, and
// the write of its incident counts. Kinds drain side by side.
const drainSteps = 5

// workerMargin covers what a stopping worker does besides its GETs: the
// pop under way (1 s) and the result's push (5 tries a second apart).
const workerMargin = 10 * time.Second

// TestGracePeriods: Kubernetes kills a pod terminationGracePeriodSeconds
// after SIGTERM; each pod's must outlast its drain.
func TestGracePeriods(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)

	p, _ := m.podRunning(t, runCmd)
	drain := drainSteps * refresher.DefaultOpTimeout
	require.NotNil(t, p.spec.TerminationGracePeriodSeconds, "%s: terminationGracePeriodSeconds", p.owner)
	grace := time.Duration(*p.spec.TerminationGracePeriodSeconds) * time.Second
	require.Greater(t, grace, drain, "%s: the grace period outlasts the longest drain (%d steps of %s)", p.owner, drainSteps, refresher.DefaultOpTimeout)

	p, c := m.podRunning(t, workerCmd)
	httpTimeout := worker.HTTPTimeoutDefault
	if i := slices.Index(c.Args, "--http-timeout"); i >= 0 {
		require.Less(t, i+1, len(c.Args), "%s: --http-timeout needs a value", p.owner)
		var err error
		httpTimeout, err = time.ParseDuration(c.Args[i+1])
		require.NoError(t, err, "%s: --http-timeout", p.owner)
	}
	require.NotNil(t, p.spec.TerminationGracePeriodSeconds, "%s: terminationGracePeriodSeconds", p.owner)
	grace = time.Duration(*p.spec.TerminationGracePeriodSeconds) * time.Second
	require.Greater(t, grace, httpTimeout+workerMargin, "%s: the grace period outlasts the jobs in hand (a GET of up to %s)", p.owner, httpTimeout)
}
