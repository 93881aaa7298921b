package refresher

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// Every documented series exists, at 0, for every kind as soon as New
// returns: before the first event a dashboard or alert sees 0, not "no data".
func TestMetricsExistBeforeTheFirstEvent(t *testing.T) {
	t.Parallel()
	sched, err := schedule.Parse(dailyAt14)
	require.NoError(t, err)
	cfg := Config{InstanceID: "metrics", Kinds: []Kind{{Name: "a", Schedule: sched}, {Name: "b", Schedule: sched}}}
	store, err := stores.Open(t.Context(), "sqlite::memory:", stores.Options{CreateSQLite: true})
	require.NoError(t, err)
	defer store.Close()
	svc, err := New(cfg, store, nil)
	require.NoError(t, err)

	families, err := svc.Metrics().Registry.Gather()
	require.NoError(t, err)
	series := map[string]int{} // "name kind" -> number of label combinations
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					series[f.GetName()+" "+l.GetValue()]++
				}
			}
		}
	}
	for _, kind := range []string{"a", "b"} {
		for name, n := range map[string]int{
			"refresher_attempts_started_total":  1,
			"refresher_results_total":           12, // 4 types x applied, stale, unknown_model
			"refresher_failure_decisions_total": 8,  // retry, planned, disabled, throttled x worker, timeout
			"refresher_push_failures_total":     1,
			"refresher_dead_letters_total":      1,
			"refresher_invalid_schedules_total": 1,
			"refresher_loop_errors_total":       2, // dispatch, poll
			"refresher_input_queue_length":      1,
			"refresher_throttled_total":         2, // held, answered
			"refresher_throttled_groups":        1,
			"refresher_incident":                1,
			"refresher_misfires_total":          2, // skip, run_once
		} {
			require.Equal(t, n, series[name+" "+kind], "%s{kind=%q}", name, kind)
		}
	}
}

// A running service logs one INFO line of its activity per kind and
// LogInterval, and one WARN line with an example for rows disabled for an
// invalid refresh_rrule.
func TestActivityIsLogged(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("good", "bad")
	_, err := b.db.Exec("UPDATE items SET refresh_rrule = 'RRULE:FREQ=SOMETIMES' WHERE uid = 'bad'")
	require.NoError(t, err)
	var out testenv.SyncBuffer
	b.start(func(c *Config) {
		c.LogInterval = 50 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&out, nil))
	})
	job := b.popJob()
	b.send(redisio.Result{UID: "good", AttemptUID: job.AttemptUID, Type: "success"})
	b.waitFor("good", "success applied", func(s policy.State) bool { return !s.Running() })

	// The counts may fall into one line or two, by timing: sum them.
	sum := func(key string) int {
		n := 0
		for line := range strings.Lines(out.String()) {
			if !strings.Contains(line, "msg=activity") {
				continue
			}
			for field := range strings.FieldsSeq(line) {
				if v, ok := strings.CutPrefix(field, key+"="); ok {
					i, err := strconv.Atoi(v)
					require.NoError(t, err)
					n += i
				}
			}
		}
		return n
	}
	testenv.Eventually(t, 10*time.Second, "activity logged", func() bool {
		return sum("started") == 1 && sum("applied") == 1 && sum("disabled") == 1
	})
	logs := out.String()
	require.Contains(t, logs, "kind=items")
	require.Contains(t, logs, `msg="rows disabled for an invalid refresh_rrule`)
	require.Contains(t, logs, "rows=1 example_key=bad")
	require.Contains(t, logs, "SOMETIMES")
	st := b.state("bad")
	require.Contains(t, st.LastError, "Invalid refresh schedule: ", "operators see the parser's message")

}

// An interval without activity logs nothing; one with activity logs its
// counts once and starts over.
func TestActivityLogSkipsQuietIntervals(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	var a activity
	a.log(log)
	require.Empty(t, out.String())
	a.addStarted(2)
	a.addDead(1)
	a.log(log)
	require.Contains(t, out.String(), "started=2 applied=0 stale=0 late=0 failed=0 disabled=0 dead_lettered=1")
	out.Reset()
	a.log(log)
	require.Empty(t, out.String(), "counts start over after each line")
}
