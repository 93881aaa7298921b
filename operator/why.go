package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/refresher"
)

// The ledger on the operator's surface: GET .../models/{uid}/why (the
// answer of `refresher why`), and on the model page its history beside its
// plan and the why form. Both read the kind's store as a
// models.LedgerReader; a store that keeps no ledger shows no history and
// the API says so.

func (s *Server) whyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/kinds/{kind}/models/{uid}/why", s.withKind(s.apiWhy))
}

// whyKind is the kind as refresher.Admin.Why reads it.
func (k *Kind) whyKind() refresher.WhyKind {
	return refresher.WhyKind{Name: k.Name, Table: k.Table, ThrottleGroup: k.ThrottleGroup, Schedule: k.Schedule,
		Policy: k.Policy, Keep: k.LedgerKeep, RowMax: k.LedgerMaxEntries, LedgerOff: k.LedgerOff}
}

// parseWhyAt reads the time asked about: RFC 3339, or (from the page's
// form) "2006-01-02T15:04" or "2006-01-02 15:04" in UTC; "" is now.
func parseWhyAt(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return now, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("at=%q: use RFC 3339, e.g. 2026-11-25T09:00:00Z (or 2026-11-25 09:00, UTC)", v)
}

// why answers the question about the model uid at at.
func (s *Server) why(ctx context.Context, k *Kind, uid string, at, now time.Time) (refresher.WhyReport, error) {
	ans, err := s.admin(k).Why(ctx, k.whyKind(), uid, at, now)
	if err != nil {
		return refresher.WhyReport{}, err
	}
	return ans.Report(k.Name, uid, at), nil
}

func (s *Server) apiWhy(w http.ResponseWriter, r *http.Request, k *Kind) {
	now := s.o.Now()
	at, err := parseWhyAt(r.URL.Query().Get("at"), now)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rep, err := s.why(r.Context(), k, modelKey(r), at, now)
	switch {
	case errors.Is(err, refresher.ErrNoModel):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no model %q in table %s", modelKey(r), k.Table.Name))
	case errors.Is(err, refresher.ErrNoLedger):
		writeError(w, http.StatusNotImplemented, err.Error())
	case err != nil:
		s.internal(w, "explain the model", err)
	default:
		writeJSON(w, http.StatusOK, rep)
	}
}

// historyLen bounds the past events the model page shows: on the drawing,
// and in the list.
const (
	historyOnTimeline = 6
	historyInList     = 20
	historyRead       = 1000
)

// HistoryEvent is one past event of a model on its page: what the ledger
// recorded of it or of its kind, in words.
type HistoryEvent struct {
	At time.Time
	// Class is the drawing's class: ok, fail, off, pause, info.
	Class string
	// Label is a word or two for the drawing ("succeeded", "paused").
	Label string
	// Detail says more for the list (the reason, who, the note).
	Detail string
	// Kind is set for an event of the whole kind.
	Kind bool
}

// history reads the model's past from the ledger over the range `why`
// reads for now (policy.WhyRange), newest last; ok is false when the
// store keeps no ledger.
func (s *Server) history(ctx context.Context, k *Kind, row models.Row, now time.Time) ([]HistoryEvent, bool, error) {
	lr, ok := k.Store.(models.LedgerReader)
	if !ok {
		return nil, false, nil
	}
	sched, _, _ := refresher.WhySchedule(k.Name, k.Schedule, k.Policy.Spread, row.Key, row.Rule)
	from, _ := policy.WhyRange(sched, k.Policy, now, now)
	entries, err := lr.Ledger(ctx, k.Name, row.Key, from, now, historyRead)
	if err != nil {
		return nil, true, err
	}
	var out []HistoryEvent
	for _, e := range entries {
		if h, ok := historyEvent(e); ok {
			out = append(out, h)
		}
	}
	out = withLastSuccess(out, row.State.LastSuccessAt, from)
	if len(out) > historyInList {
		out = out[len(out)-historyInList:]
	}
	return out, true, nil
}

// withLastSuccess adds the row's last success (last, its column) to out,
// in time order, when it falls after from and no succeeded entry names
// it: a plain success is counted in its batch's routine entry of the kind
// (ledger.routine: batches), not recorded on the row.
func withLastSuccess(out []HistoryEvent, last, from time.Time) []HistoryEvent {
	if last.IsZero() || last.Before(from) {
		return out
	}
	last = last.UTC()
	i := len(out)
	for i > 0 && out[i-1].At.After(last) {
		i--
	}
	for _, h := range out {
		if h.Label == "succeeded" && h.At.Equal(last) {
			return out
		}
	}
	h := HistoryEvent{At: last, Class: "ok", Label: "succeeded", Detail: "its last success, from the row (routine successes are recorded per batch)"}
	return slices.Insert(out, i, h)
}

// historyEvent is an entry as the page shows it; ok is false for the
// entries it leaves to `why` (dispatches, leases, stale and late answers,
// other groups' holds).
func historyEvent(e policy.Entry) (HistoryEvent, bool) {
	h := HistoryEvent{At: e.At.UTC(), Kind: e.Whole}
	who := func() string {
		s := ""
		if e.By != "" {
			s = "by " + e.By
		}
		if e.Note != "" {
			s = strings.TrimSpace(s + ": " + e.Note)
		}
		return s
	}
	switch e.Event {
	case policy.EventSucceeded:
		h.Class, h.Label = "ok", "succeeded"
	case policy.EventFailed, policy.EventTimedOut:
		h.Class, h.Label, h.Detail = "fail", "failed", e.Reason
		if e.Event == policy.EventTimedOut {
			h.Label = "timed out"
		}
		if !e.Next.IsZero() {
			h.Detail += "; next try " + e.Next.UTC().Format("01-02 15:04")
		}
	case policy.EventDisabled:
		h.Class, h.Label, h.Detail = "off", "disabled", e.Reason
	case policy.EventEnabled:
		h.Class, h.Label, h.Detail = "info", "enabled", who()
	case policy.EventTriggered:
		h.Class, h.Label, h.Detail = "info", "refresh now", who()
	case policy.EventMisfireSkipped:
		h.Class, h.Label, h.Detail = "off", "skipped", "due past the catchup window (downtime)"
	case policy.EventPaused:
		h.Class, h.Label, h.Detail = "pause", "paused", who()
	case policy.EventResumed:
		h.Class, h.Label, h.Detail = "pause", "resumed", who()
	case policy.EventIncidentOpened:
		h.Class, h.Label, h.Detail = "fail", "incident", e.Reason
	case policy.EventIncidentClosed:
		h.Class, h.Label = "info", "incident ends"
	default:
		return h, false
	}
	if h.Kind {
		h.Label = "kind " + h.Label
	}
	return h, true
}
