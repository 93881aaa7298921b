package refresher

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// keyRecorder records the arguments of every command a Redis client sends,
// so that a test can ask Redis (COMMAND GETKEYS) which keys they touched.
type keyRecorder struct {
	mu   sync.Mutex
	cmds map[string][]any
}

func (r *keyRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *keyRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.record(cmd)
		return next(ctx, cmd)
	}
}

func (r *keyRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			r.record(c)
		}
		return next(ctx, cmds)
	}
}

func (r *keyRecorder) record(cmd redis.Cmder) {
	var b strings.Builder
	for _, a := range cmd.Args() {
		fmt.Fprint(&b, a, "\x00")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmds == nil {
		r.cmds = map[string][]any{}
	}
	r.cmds[b.String()] = cmd.Args()
}

// keys asks Redis which keys the recorded commands touched (commands
// without keys, such as PING or EXEC, have none).
func (r *keyRecorder) keys(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx := context.Background()
	r.mu.Lock()
	all := make([][]any, 0, len(r.cmds))
	for _, args := range r.cmds {
		all = append(all, args)
	}
	r.mu.Unlock()
	seen := map[string]bool{}
	for _, args := range all {
		keys, err := rdb.Do(ctx, append([]any{"command", "getkeys"}, args...)...).StringSlice()
		if err != nil {
			continue // no key arguments
		}
		for _, k := range keys {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ownKey reports whether key is one of l's lists or derives from one
// ("<list>:...").
func ownKey(l redisio.Lists, key string) bool {
	for _, name := range []string{l.Input, l.Output, l.Dead} {
		if key == name || strings.HasPrefix(key, name+":") {
			return true
		}
	}
	return false
}

// keyPattern is key with its kind's list names, instance ids and minutes
// replaced by placeholders, as the key list in the docs writes them.
func keyPattern(l redisio.Lists, instance, key string) string {
	for _, r := range []struct{ name, ph string }{{l.Input, "<input>"}, {l.Output, "<output>"}, {l.Dead, "<dead>"}} {
		if key == r.name || strings.HasPrefix(key, r.name+":") {
			key = r.ph + key[len(r.name):]
			break
		}
	}
	key = strings.ReplaceAll(key, instance, "<instance>")
	key = regexp.MustCompile(`:stats:[0-9]+$`).ReplaceAllString(key, ":stats:<minute>")
	key = regexp.MustCompile(`:stats10:[0-9]+$`).ReplaceAllString(key, ":stats10:<ten minutes>")
	return regexp.MustCompile(`:incident:[0-9]+$`).ReplaceAllString(key, ":incident:<minute>")
}

// Two deployments on one Redis database, each with its own list names (as
// two redis_prefix values give them) and the same kind name, both with
// throttle holds, an incident window, pauses and the alert gauges: neither
// sees the other's, and every key each one touches derives from its own
// lists.
func TestDeploymentsOnOneRedisStayApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deploy := func() (*testBundle, *keyRecorder) {
		b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:0s,1m"})
		b.kind.Table.Payload = []string{"input_url", "name"}
		b.kind.ThrottleGroup = "name"
		b.cfg.Kinds = []Kind{b.kind}
		rec := &keyRecorder{}
		b.rdb.AddHook(rec)
		return b, rec
	}
	a, recA := deploy()
	b, recB := deploy()
	require.NotEqual(t, a.kind.Lists.Input, b.kind.Lists.Input)
	a.insertGroup("api-x", "a1", "a2")
	b.insertGroup("api-x", "b1", "b2", "b3")
	a.start(nil)
	b.start(nil)

	// A: a 429 holds group api-x, and a worker-scope failure flags the
	// window. B: its results succeed.
	ja, jb := a.jobsByUID(2), b.jobsByUID(3)
	a.send(redisio.Result{UID: "a1", AttemptUID: ja["a1"].AttemptUID, Type: "failure", Reason: "HTTP 429",
		RetryAfterSeconds: 600, ThrottleKey: "api-x"})
	a.send(redisio.Result{UID: "a2", AttemptUID: ja["a2"].AttemptUID, Type: "failure", Reason: "out of disk", Scope: "worker"})
	for uid, j := range jb {
		b.send(redisio.Result{UID: uid, AttemptUID: j.AttemptUID, Type: "success"})
	}
	for _, uid := range []string{"a1", "a2"} {
		a.waitFor(uid, "result applied", func(s policy.State) bool { return !s.Running() })
	}
	for uid := range jb {
		b.waitFor(uid, "result applied", func(s policy.State) bool { return !s.Running() })
	}

	adminA, adminB := NewAdmin(a.store, a.rio), NewAdmin(b.store, b.rio)
	guard := policy.Guard{}.WithDefaults()
	incident := func(adm *Admin, k Kind) func() IncidentState {
		return func() IncidentState {
			st, err := adm.KindIncident(ctx, k.Lists, guard, t0)
			require.NoError(t, err)
			return st
		}
	}
	// The poller writes a batch's counts with its next read of the window.
	waitCounter(t, func() float64 { return float64(incident(adminA, a.kind)().Results) }, 2, "A's window")
	waitCounter(t, func() float64 { return float64(incident(adminB, b.kind)().Results) }, 3, "B's window")
	stA, stB := incident(adminA, a.kind)(), incident(adminB, b.kind)()
	require.Equal(t, IncidentState{Results: 2, Failures: 2, Worker: true, Active: stA.Active, WindowSeconds: stA.WindowSeconds}, stA)
	require.Equal(t, IncidentState{Results: 3, WindowSeconds: stB.WindowSeconds}, stB, "B's window holds none of A's counts")

	// Holds: A's group api-x is held; B's group of the same name is not.
	waitCounter(t, func() float64 {
		h, err := adminA.ThrottleHolds(ctx, a.kind.Lists, t0)
		require.NoError(t, err)
		return float64(len(h))
	}, 1, "A's hold")
	holdsB, err := adminB.ThrottleHolds(ctx, b.kind.Lists, t0)
	require.NoError(t, err)
	require.Empty(t, holdsB)

	// Pauses: A pauses its kind and a model; B sees neither, and its
	// dispatcher still starts B's row of group api-x.
	info := PauseInfo{Note: "upstream down", By: "ops"}
	require.NoError(t, adminA.PauseKind(ctx, a.kind.Lists, info))
	_, err = adminA.Pause(ctx, a.kind.Table, a.kind.Lists, []string{"a2"}, info)
	require.NoError(t, err)
	kp, err := adminB.KindPause(ctx, b.kind.Lists)
	require.NoError(t, err)
	require.Nil(t, kp)
	pm, err := adminB.PausedModels(ctx, b.kind.Lists)
	require.NoError(t, err)
	require.Empty(t, pm)
	_, err = adminB.Trigger(ctx, b.kind.Table, []string{"b1"}, t0)
	require.NoError(t, err)
	require.Equal(t, "b1", b.popJob().UID)

	// Gauges: each deployment counts its own kind (same name, "items") and
	// reports its own values.
	gauges := func(d *testBundle) (*Gauges, bool) {
		g := NewGauges(prometheus.NewRegistry(), GaugeConfig{
			Kinds:     []GaugeKind{{Name: d.kind.Name, Table: d.kind.Table, Lists: d.kind.Lists}},
			Inspector: d.store, Redis: d.rio, Interval: time.Minute, Clock: d.clock})
		computed, err := g.Tick(ctx)
		require.NoError(t, err)
		return g, computed
	}
	gA, computedA := gauges(a)
	gB, computedB := gauges(b)
	require.True(t, computedA && computedB, "each deployment counts its own kind (A %v, B %v)", computedA, computedB)
	for _, c := range []struct {
		g                     *Gauges
		total, paused, kindOn float64
	}{{gA, 2, 1, 1}, {gB, 3, 0, 0}} {
		require.Equal(t, c.total, testutil.ToFloat64(c.g.models.WithLabelValues("items", "", "total")))
		require.Equal(t, c.paused, testutil.ToFloat64(c.g.models.WithLabelValues("items", "", "paused")))
		require.Equal(t, c.kindOn, testutil.ToFloat64(c.g.kindPaused.WithLabelValues("items")))
	}

	// Every key each deployment's clients touched is one of its own lists
	// or derives from one.
	for _, d := range []struct {
		name string
		b    *testBundle
		rec  *keyRecorder
	}{{"A", a, recA}, {"B", b, recB}} {
		keys := d.rec.keys(t, d.b.rdb)
		require.NotEmpty(t, keys)
		for _, k := range keys {
			require.True(t, ownKey(d.b.kind.Lists, k), "deployment %s touched key %q, which is not its own", d.name, k)
		}
	}

	// SCAN: the keys A left in Redis are those the docs list.
	var patterns []string
	seen := map[string]bool{}
	iter := a.rdb.Scan(ctx, 0, strings.TrimSuffix(a.kind.Lists.Input, "items-input")+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		require.True(t, ownKey(a.kind.Lists, k), "key %q is not A's", k)
		if p := keyPattern(a.kind.Lists, a.cfg.InstanceID, k); !seen[p] {
			seen[p] = true
			patterns = append(patterns, p)
		}
	}
	require.NoError(t, iter.Err())
	sort.Strings(patterns)
	require.Equal(t, []string{
		"<input>:gauges:lock", "<input>:gauges:snapshot",
		"<input>:incident:<minute>", "<input>:incident:worker",
		"<input>:paused", "<input>:paused-models",
		"<input>:stats10:<ten minutes>", "<input>:stats:<minute>", "<input>:throttle",
		"<output>:batch:<instance>", // for a minute after the last Ack
		"<output>:heartbeat:<instance>", "<output>:heartbeat:<instance>:ahead",
	}, patterns)
}
