package refresher

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the service's Prometheus metrics, on a registry of their own
// so that several services (tests) can live in one process.
type Metrics struct {
	Registry *prometheus.Registry

	// Started counts attempts started, by kind.
	Started *prometheus.CounterVec
	// Results counts results by kind, type and outcome (applied, stale,
	// unknown_model, invalid).
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
		Queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "refresher", Name: "input_queue_length", Help: "Jobs waiting in the input list.",
		}, []string{"kind"}),
	}
	r.MustRegister(m.Queued, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
