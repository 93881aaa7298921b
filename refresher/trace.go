package refresher

import (
	"time"

	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/redisio"
)

// The service's part of a refresh's trace (package tracing): a dispatch
// span per job, from the start of the pass that claimed its row to its
// push, whose W3C trace context goes into the job; and an apply span per
// result, from the start of its batch's apply to its ack, the child of the
// span the result's traceparent names (the worker's). With Config.Tracer
// nil every function here returns at once: no time is read, no span is
// made and no job carries trace context.

// traceStart returns when the pass in hand began, for its spans: the zero
// time without a Tracer.
func (d *dispatcher) traceStart() time.Time {
	if d.cfg.Tracer == nil {
		return time.Time{}
	}
	return time.Now()
}

// traceJobs starts the dispatch span of each job of b (a pass's, just
// committed) and writes its trace context into the job.
func (d *dispatcher) traceJobs(start time.Time, b *pushBatch) {
	t := d.cfg.Tracer
	if t == nil {
		return
	}
	b.spans = b.spans[:0]
	for i := range b.jobs {
		j := &b.jobs[i]
		s, c := t.Dispatch(start, tracing.Job{Kind: j.Kind, Key: j.UID, AttemptUID: j.AttemptUID, AttemptNo: j.AttemptNo}, b.lists[i])
		j.TraceParent, j.TraceState = c.Parent, c.State
		b.spans = append(b.spans, s)
	}
}

// endJobSpans ends the spans of traceJobs once b's push is done; err is
// the push's error (the attempts are undone).
func (d *dispatcher) endJobSpans(b *pushBatch, err error) {
	for _, s := range b.spans {
		if err != nil {
			s.Fail("push failed; the attempt is undone")
		}
		s.End()
	}
	clear(b.spans)
	b.spans = b.spans[:0]
}

// traceKey names a result of a batch for its apply span's outcome.
type traceKey struct{ uid, attemptUID, typ string }

// traceStart returns when the batch in hand began to be applied, for its
// spans, and forgets the last batch's outcomes: the zero time without a
// Tracer.
func (p *poller) traceStart() time.Time {
	if p.cfg.Tracer == nil {
		return time.Time{}
	}
	if p.outcomes == nil {
		p.outcomes = map[traceKey]string{}
	}
	clear(p.outcomes)
	return time.Now()
}

// note keeps what became of result r (applied, stale, late; a dead
// letter, an unknown model too, is told by traceApplied) for its apply
// span; nothing without a Tracer.
func (p *poller) note(r redisio.Result, outcome string) {
	if p.outcomes != nil {
		p.outcomes[traceKey{r.UID, r.AttemptUID, r.Type}] = outcome
	}
}

// maxSpanError bounds the error text a failed apply span carries.
const maxSpanError = 512

// traceApplied makes the apply span of each result of a batch that was
// applied and acknowledged (msgs), from start to now; dead are its dead
// letters, whose spans fail with their error. Messages that did not decode
// name no attempt and get none.
func (p *poller) traceApplied(start time.Time, msgs, dead []redisio.Message) {
	t := p.cfg.Tracer
	if t == nil {
		return
	}
	failed := make(map[traceKey]string, len(dead))
	for _, m := range dead {
		if m.Result.UID != "" && m.Err != nil {
			failed[traceKey{m.Result.UID, m.Result.AttemptUID, m.Result.Type}] = m.Err.Error()
		}
	}
	for _, m := range msgs {
		r := m.Result
		if m.Err != nil || r.UID == "" {
			continue // not decoded
		}
		k := traceKey{r.UID, r.AttemptUID, r.Type}
		why, dead := failed[k]
		outcome := p.outcomes[k]
		if dead {
			outcome = "dead_letter"
		}
		s := t.Apply(start, tracing.Job{Kind: p.kind.Name, Key: r.UID, AttemptUID: r.AttemptUID}, r.Type, outcome, tracing.Context{Parent: r.TraceParent})
		if dead {
			s.Fail(why[:min(len(why), maxSpanError)])
		}
		s.End()
	}
}
