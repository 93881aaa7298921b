package refresher

import (
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// tally holds the counts of one batch (of the poller or the dispatcher)
// until its transaction commits,
// so that a batch whose commit fails, and which comes back from the
// processing list, is counted once, not once per try. (A batch delivered
// again after its commit counts its results as stale the second time, which
// they are.)
type tally struct {
	results   map[[2]string]int // by result type and outcome label (late counts as stale)
	decisions map[[2]string]int // failure decisions by branch and cause (worker, timeout)
	late      int               // results read at or after their timeout_at
	disabled  int               // rows disabled (any cause)
	invalid   int               // rows disabled for an invalid schedule
	held      int               // due rows held by their throttle group
	answered  int               // throttled results ("scope":"group")
	timeouts  int               // attempts the dispatcher declared timed out
	misfires  map[policy.Misfire]int
	// invalidKey and invalidErr are the batch's first invalid schedule, for
	// the log.
	invalidKey, invalidErr string
}

func (t *tally) reset() {
	if t.results == nil {
		t.results, t.decisions = map[[2]string]int{}, map[[2]string]int{}
		t.misfires = map[policy.Misfire]int{}
	}
	clear(t.results)
	clear(t.decisions)
	clear(t.misfires)
	t.late, t.disabled, t.invalid = 0, 0, 0
	t.held, t.answered, t.timeouts = 0, 0, 0
	t.invalidKey, t.invalidErr = "", ""
}

func (t *tally) result(typ, outcome string) { t.results[[2]string{typ, outcome}]++ }

// applied counts n results of type typ applied as they came (what apply
// counts for each with policy.OutcomeApplied): the poller's plain
// successes, counted once per batch rather than once each.
func (t *tally) applied(typ string, n int) {
	if n > 0 {
		t.results[[2]string{typ, string(policy.OutcomeApplied)}] += n
	}
}

func (t *tally) decision(d policy.Decision, cause string) {
	t.decisions[[2]string{d.Branch.String(), cause}]++
	if d.Branch == policy.BranchThrottled {
		t.answered++
	}
	if d.Branch == policy.BranchDisabled {
		t.disabled++
	}
}

func (t *tally) invalidSchedule(key, err string) {
	if t.invalid == 0 {
		t.invalidKey, t.invalidErr = key, err
	}
	t.invalid++
	t.disabled++
}

// due counts what the dispatcher did with one row.
func (t *tally) due(key string, d *policy.DueDecision) {
	if d.Action == policy.DueInvalidSchedule {
		t.invalidSchedule(key, d.ScheduleError)
	}
	if d.TimedOut {
		t.timeouts++
		t.decision(d.Timeout, "timeout")
	}
	if d.Action == policy.DueHeld {
		t.held++
	}
	if d.Misfire != "" {
		t.misfires[d.Misfire]++
	}
}

// apply counts what the poller did with one result of type typ.
func (t *tally) apply(key, typ string, d policy.ApplyDecision) {
	t.result(typ, d.Outcome.Metric())
	if d.Outcome == policy.OutcomeLate {
		t.late++
	}
	if d.InvalidSchedule {
		t.invalidSchedule(key, d.ScheduleError)
	}
	if d.Failed {
		cause := "worker"
		if d.TimedOut {
			cause = "timeout"
		}
		t.decision(d.Failure, cause)
	}
}

// flush adds the batch's counts to the metrics of kind and to its activity
// log.
func (t *tally) flush(m *Metrics, a *activity, kind string) {
	for k, n := range t.results {
		m.Results.WithLabelValues(kind, k[0], k[1]).Add(float64(n))
	}
	for k, n := range t.decisions {
		m.Decisions.WithLabelValues(kind, k[0], k[1]).Add(float64(n))
	}
	if t.invalid > 0 {
		m.InvalidSchedules.WithLabelValues(kind).Add(float64(t.invalid))
	}
	if t.held > 0 {
		m.Throttled.WithLabelValues(kind, "held").Add(float64(t.held))
	}
	if t.answered > 0 {
		m.Throttled.WithLabelValues(kind, "answered").Add(float64(t.answered))
	}
	for action, n := range t.misfires {
		m.Misfires.WithLabelValues(kind, string(action)).Add(float64(n))
	}
	a.add(t)
}

// stats returns what the batch adds to the kind's charts: results applied
// (successes and failures that changed their row) and failures (a worker's,
// a late answer's, or a timeout's; throttled answers are not failures).
func (t *tally) stats() redisio.StatsCount {
	var c redisio.StatsCount
	for k, n := range t.results {
		if k[1] == string(policy.OutcomeApplied) && (k[0] == redisio.ResultSuccess || k[0] == redisio.ResultFailure) {
			c.Applied += int64(n)
		}
	}
	for _, n := range t.decisions {
		c.Failed += int64(n)
	}
	c.Failed -= int64(t.answered)
	return c
}
