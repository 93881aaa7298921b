package refresher

// tally holds the counts of one batch (of the poller or the dispatcher)
// until its transaction commits,
// so that a batch whose commit fails, and which comes back from the
// processing list, is counted once, not once per try. (A batch delivered
// again after its commit counts its results as stale the second time, which
// they are.)
type tally struct {
	results   map[[2]string]int // by result type and outcome
	decisions map[string]int    // failure decisions by branch
	invalid   int               // rows disabled for an invalid schedule
}

func (t *tally) reset() {
	if t.results == nil {
		t.results, t.decisions = map[[2]string]int{}, map[string]int{}
	}
	clear(t.results)
	clear(t.decisions)
	t.invalid = 0
}

func (t *tally) result(typ, outcome string) { t.results[[2]string{typ, outcome}]++ }

// flush adds the batch's counts to the metrics of kind; cause labels the
// failure decisions ("worker" for the poller, "timeout" for the dispatcher).
func (t *tally) flush(m *Metrics, kind, cause string) {
	for k, n := range t.results {
		m.Results.WithLabelValues(kind, k[0], k[1]).Add(float64(n))
	}
	for branch, n := range t.decisions {
		m.Decisions.WithLabelValues(kind, branch, cause).Add(float64(n))
	}
	if t.invalid > 0 {
		m.InvalidSchedules.WithLabelValues(kind).Add(float64(t.invalid))
	}
}
