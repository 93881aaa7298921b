package refresher

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/refresher/refresher/policy"
)

// Metrics are the service's Prometheus metrics, on a registry of their own
// so that several services (tests) can live in one process.
type Metrics struct {
	Registry *prometheus.Registry

	// Started counts attempts started, by kind.
	Started *prometheus.CounterVec
	// Results counts results by kind, type and outcome (applied, stale,
	// unknown_model). A result read at or after its attempt's timeout_at is
	// not applied and counts as stale.
	Results *prometheus.CounterVec
	// Decisions counts failure decisions by kind and branch (retry, planned,
	// disabled) and by cause (worker, timeout).
	Decisions *prometheus.CounterVec
	// PushFailures counts batches of jobs whose push to Redis failed and whose
	// attempts were undone.
	PushFailures *prometheus.CounterVec
	// DeadLetters counts messages sent to the dead-letter list.
	DeadLetters *prometheus.CounterVec
	// InvalidSchedules counts rows disabled for an invalid refresh_rrule.
	InvalidSchedules *prometheus.CounterVec
	// Errors counts failed passes by kind and loop (dispatch, poll).
	Errors *prometheus.CounterVec
	// Queued is the length of the input list last seen, by kind.
	Queued *prometheus.GaugeVec
	// Throttled counts rows held by their throttle group, by kind and how:
	// held (due, not dispatched) or answered (a "scope":"group" result).
	Throttled *prometheus.CounterVec
	// ThrottledGroups is the number of throttle groups held, as the
	// dispatcher last read them, by kind.
	ThrottledGroups *prometheus.GaugeVec
	// Incident is 1 while the kind is in an incident (its failures do not
	// count toward giving up), else 0.
	Incident *prometheus.GaugeVec
	// Misfires counts rows found due for longer than their kind's catchup
	// window, by kind and action (skip: moved to the next occurrence;
	// run_once: started once).
	Misfires *prometheus.CounterVec
}

// NewMetrics registers the metrics (and Go runtime collectors) on a new
// registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "refresher", Name: name, Help: help}, labels)
		r.MustRegister(c)
		return c
	}
	m := &Metrics{
		Registry:         r,
		Started:          counter("attempts_started_total", "Attempts started.", "kind"),
		Results:          counter("results_total", "Results read from the output list.", "kind", "type", "outcome"),
		Decisions:        counter("failure_decisions_total", "Failure decisions by branch.", "kind", "branch", "cause"),
		PushFailures:     counter("push_failures_total", "Job batches whose push failed; their attempts were undone.", "kind"),
		DeadLetters:      counter("dead_letters_total", "Messages sent to the dead-letter list.", "kind"),
		InvalidSchedules: counter("invalid_schedules_total", "Rows disabled for an invalid refresh schedule.", "kind"),
		Errors:           counter("loop_errors_total", "Passes that failed with an error.", "kind", "loop"),
		Misfires:         counter("misfires_total", "Rows due for longer than the catchup window, by the misfire action taken.", "kind", "action"),
		Queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "refresher", Name: "input_queue_length", Help: "Jobs waiting in the input list.",
		}, []string{"kind"}),
		Throttled: counter("throttled_total", "Rows held by their throttle group: held (due, not dispatched) or answered (a throttled result).", "kind", "how"),
		ThrottledGroups: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "refresher", Name: "throttled_groups", Help: "Throttle groups held, as the dispatcher last read them.",
		}, []string{"kind"}),
		Incident: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "refresher", Name: "incident", Help: "1 while the kind is in an incident: failures do not count toward giving up.",
		}, []string{"kind"}),
	}
	r.MustRegister(m.Queued, m.ThrottledGroups, m.Incident, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// The label values of the metrics, every one of which is initialised at 0
// for every kind so that a series exists before its first event (rate() and
// absent() alerts see it from the start).
var (
	resultTypes      = []string{"success", "failure", "status", "extend"}
	resultOutcomes   = []string{"applied", "stale", "unknown_model"}
	decisionBranches = []string{"retry", "planned", "disabled", "throttled"}
	throttledHows    = []string{"held", "answered"}
	decisionCauses   = []string{"worker", "timeout"}
	loops            = []string{"dispatch", "poll"}
)

// initKind creates every series of kind at 0.
func (m *Metrics) initKind(kind string) {
	m.Started.WithLabelValues(kind)
	for _, typ := range resultTypes {
		for _, outcome := range resultOutcomes {
			m.Results.WithLabelValues(kind, typ, outcome)
		}
	}
	for _, branch := range decisionBranches {
		for _, cause := range decisionCauses {
			m.Decisions.WithLabelValues(kind, branch, cause)
		}
	}
	m.PushFailures.WithLabelValues(kind)
	m.DeadLetters.WithLabelValues(kind)
	m.InvalidSchedules.WithLabelValues(kind)
	for _, loop := range loops {
		m.Errors.WithLabelValues(kind, loop)
	}
	m.Queued.WithLabelValues(kind)
	for _, how := range throttledHows {
		m.Throttled.WithLabelValues(kind, how)
	}
	m.ThrottledGroups.WithLabelValues(kind)
	m.Incident.WithLabelValues(kind)
	for _, action := range policy.Misfires {
		m.Misfires.WithLabelValues(kind, string(action))
	}
}
