package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/refresher"
)

// overviewTTL is how long /api/v1/kinds and the overview page reuse their
// last answer, so that several dashboards refreshing every few seconds
// cost one count; it is also the oldest count of a kind the overview takes
// from the Counter (one the alert gauges made).
const overviewTTL = 2 * time.Second

// overviewMaxAge is the oldest answer the overview gives. An answer
// between overviewTTL and this old is given at once while a recount runs in
// the background: an open page (it refreshes every 5 s) never waits for a
// count, which takes about a second on a table of a million rows. An older
// one (a reload after a quiet while) is counted before the answer, so that
// a page opened after an hour does not show the numbers of an hour ago.
const overviewMaxAge = time.Minute

func (s *Server) apiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/kinds", s.apiKinds)
	mux.HandleFunc("GET /api/v1/kinds/{kind}/models", s.withKind(s.apiModels))
	mux.HandleFunc("GET /api/v1/kinds/{kind}/models/{uid}", s.withKind(s.apiModel))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/models/{uid}/enable", s.authed(s.withKind(s.apiEnable)))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/models/{uid}/trigger", s.authed(s.withKind(s.apiTrigger)))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/enable", s.authed(s.withKind(s.apiBulkEnable)))
	s.pauseRoutes(mux)
	s.whyRoutes(mux)
	mux.HandleFunc("GET /api/v1/kinds/{kind}/dead", s.withKind(s.apiDead))
	mux.HandleFunc("GET /api/v1/kinds/{kind}/activity", s.withKind(s.apiActivity))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/dead/replay", s.authed(s.withKind(s.apiDeadReplay)))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/dead/discard", s.authed(s.withKind(s.apiDeadDiscard)))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no API route %s %s (see docs/operating.md, \"The API\")", r.Method, r.URL.Path))
	})
}

// kindHandler is a handler of one kind's routes.
type kindHandler func(w http.ResponseWriter, r *http.Request, k *Kind)

// withKind resolves {kind}, answering 404 for an unknown one.
func (s *Server) withKind(h kindHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, ok := s.kinds[r.PathValue("kind")]
		if !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no kind %q is configured", r.PathValue("kind")))
			return
		}
		h(w, r, k)
	}
}

type ctxKey struct{}

// authed lets the request through only with a valid bearer token of role
// act, whose name it puts in the context for the log.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, status, msg := s.auth.check(r, RoleAct)
		if status != 0 {
			s.refuse(w, r, status, msg)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, name)))
	}
}

// actor is the name of the token of an authenticated request.
func actor(ctx context.Context) string { n, _ := ctx.Value(ctxKey{}).(string); return n }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// internal logs err and answers 500 with a message that names what failed
// but not the error's text, which may name hosts.
func (s *Server) internal(w http.ResponseWriter, what string, err error) {
	s.o.Logger.Error("operator: "+what, "err", err)
	status := http.StatusInternalServerError
	if errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusGatewayTimeout
	}
	writeError(w, status, what+" failed; the service log has the detail")
}

// KindSummary is one kind on the overview: GET /api/v1/kinds.
type KindSummary struct {
	Name     string `json:"name"`
	Priority string `json:"priority"`
	Table    string `json:"table"`
	Total    int64  `json:"total"`
	Due      int64  `json:"due"`
	Late     int64  `json:"late"`
	Running  int64  `json:"running"`
	Failing  int64  `json:"failing"`
	Disabled int64  `json:"disabled"`
	// TotalEstimated says that Total is the database's estimate from its
	// table statistics, not a count (a table of more than
	// models.ExactTotalUpTo rows).
	TotalEstimated bool `json:"total_estimated,omitempty"`
	// Estimated names the states (due, late, running, failing, disabled)
	// whose count is the database's estimate, not a count: each has more
	// than models.ExactStateUpTo rows. The other states are exact.
	Estimated []models.RowState `json:"estimated,omitempty"`
	// Backlog is the due rows by priority level (models.Inspector.Backlog):
	// the kind's level always, the others with due rows; lower runs first.
	Backlog []models.LevelCount `json:"backlog"`
	// Paused is the number of models an operator paused.
	Paused int64 `json:"paused"`
	// Pause is the kind's own pause; nil when it is not paused.
	Pause *refresher.PauseInfo `json:"pause,omitempty"`
	// Incident is the kind's incident (its guard's window); nil when the
	// kind is not in one.
	Incident *refresher.IncidentState `json:"incident,omitempty"`
	// ThrottledGroups is the number of the kind's throttle groups held.
	ThrottledGroups int `json:"throttled_groups"`
	// OldestDueAgeSeconds is now - the oldest due refresh_at; 0 when
	// nothing is due.
	OldestDueAgeSeconds float64    `json:"oldest_due_age_seconds"`
	OldestDue           *time.Time `json:"oldest_due,omitempty"`
	MaxAttemptNo        int        `json:"max_attempt_no"`
	LateAfterSeconds    float64    `json:"late_after_seconds"`
	Lists               ListLens   `json:"lists"`
	// Error says what could not be read; the other fields are then partial.
	Error string `json:"error,omitempty"`
}

// IsEstimated reports whether the count of state ("all" is the total) is
// an estimate, for the overview's "≈".
func (k KindSummary) IsEstimated(state string) bool {
	return models.Counts{TotalEstimated: k.TotalEstimated, Estimated: k.Estimated}.IsEstimated(models.RowState(state))
}

// ListLens are the lengths of a kind's Redis lists.
type ListLens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Dead   int64 `json:"dead"`
}

func (s *Server) apiKinds(w http.ResponseWriter, r *http.Request) {
	sums, at, err := s.overviewCached(r.Context())
	if err != nil {
		s.internal(w, "count the models", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"kinds": sums, "counted_at": at.UTC()})
}

// overviewCached returns the overview and when its rows were counted. An
// answer younger than overviewTTL is given again; one younger than
// overviewMaxAge too, and it starts one recount in the background; an
// older one, or none, is counted first. An action drops the answer and the
// counts, so its effect shows on the next call.
func (s *Server) overviewCached(ctx context.Context) ([]KindSummary, time.Time, error) {
	s.mu.Lock()
	now := s.o.Now()
	if s.overview != nil && !now.Before(s.cachedAt) && (now.Sub(s.cachedAt) < overviewMaxAge || s.closed) {
		sums, at := s.overview, s.cachedAt
		if now.Sub(at) >= overviewTTL && !s.counting && !s.closed {
			s.counting = true
			s.recounts.Go(s.recount)
		}
		s.mu.Unlock()
		return sums, at, nil
	}
	s.mu.Unlock()
	sums, at, err := s.Overview(ctx, now)
	if err != nil {
		return nil, now, err
	}
	s.mu.Lock()
	if s.overview == nil || !at.Before(s.cachedAt) {
		s.overview, s.cachedAt = sums, at
	}
	s.mu.Unlock()
	return sums, at, nil
}

// recount refreshes the cached overview in the background, until Close.
func (s *Server) recount() {
	ctx, cancel := context.WithTimeout(s.recountCtx, 30*time.Second)
	defer cancel()
	sums, at, err := s.Overview(ctx, s.o.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counting = false
	if err != nil {
		s.o.Logger.Error("operator: count the models", "err", err)
		return
	}
	if s.overview != nil && !at.Before(s.cachedAt) { // not dropped by an action meanwhile
		s.overview, s.cachedAt = sums, at
	}
}

// Overview reads every kind's counts (from the Counter: made at most
// overviewTTL before now) and its list lengths, pauses and guards at now;
// at is when the oldest kind's rows were counted (now when none were), and
// the ages of the oldest due rows are as of their count.
func (s *Server) Overview(ctx context.Context, now time.Time) (sums []KindSummary, at time.Time, err error) {
	out := make([]KindSummary, 0, len(s.order))
	at = now
	for _, name := range s.order {
		k := s.kinds[name]
		ks := KindSummary{Name: k.Name, Priority: k.Priority, Table: k.Table.Name, LateAfterSeconds: k.LateAfter.Seconds()}
		kc, err := s.o.Counter.Count(ctx, refresher.CountedKind{Name: k.Name, Table: k.Table, LateAfter: k.LateAfter, Inspector: k.Store},
			now, overviewTTL)
		if err != nil {
			if ctx.Err() != nil {
				return nil, at, err
			}
			s.o.Logger.Error("operator: count models", "kind", k.Name, "err", err)
			ks.Error = "cannot count the models of table " + k.Table.Name + "; the service log has the detail"
		} else {
			c := kc.Counts
			at = minTime(at, kc.At)
			ks.Total, ks.Due, ks.Late, ks.Running, ks.Failing, ks.Disabled = c.Total, c.Due, c.Late, c.Running, c.Failing, c.Disabled
			ks.MaxAttemptNo, ks.TotalEstimated, ks.Estimated = c.MaxAttemptNo, c.TotalEstimated, c.Estimated
			if !c.OldestDue.IsZero() {
				t := c.OldestDue
				ks.OldestDue = &t
				ks.OldestDueAgeSeconds = max(0, kc.At.Sub(t).Seconds())
			}
			ks.Backlog = kc.Backlog
		}
		if ks.Lists, ks.Paused, ks.Pause, err = s.listLens(ctx, k); err != nil {
			if ctx.Err() != nil {
				return nil, at, err
			}
			s.o.Logger.Error("operator: list lengths", "kind", k.Name, "err", err)
			ks.Error = "cannot read the Redis list lengths; the service log has the detail"
		}
		if ks.Incident, ks.ThrottledGroups, err = s.kindGuards(ctx, k, now); err != nil {
			if ctx.Err() != nil {
				return nil, at, err
			}
			s.o.Logger.Error("operator: incident and throttle holds", "kind", k.Name, "err", err)
			ks.Error = "cannot read the incident guard or the throttle holds; the service log has the detail"
		}
		out = append(out, ks)
	}
	return out, at, nil
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// listLens reads, in one round trip, a kind's list lengths, the number of
// its paused models and its own pause (nil when not paused).
func (s *Server) listLens(ctx context.Context, k *Kind) (ListLens, int64, *refresher.PauseInfo, error) {
	st, err := s.admin(k).ListState(ctx, k.Lists)
	if err != nil {
		return ListLens{}, 0, nil, err
	}
	return ListLens{Input: st.Input, Output: st.Output, Dead: st.Dead}, st.PausedModels, st.KindPause, nil
}

// ModelItem is one model in the API: its state columns, named as in the
// table without the refresh_ prefix, and the one-word state.
type ModelItem struct {
	UID            string     `json:"uid"`
	State          string     `json:"state"`
	RefreshAt      *time.Time `json:"refresh_at"`
	AttemptUID     string     `json:"attempt_uid,omitempty"`
	AttemptAt      *time.Time `json:"attempt_at"`
	AttemptNo      int        `json:"attempt_no"`
	TimeoutAt      *time.Time `json:"timeout_at"`
	DisabledAt     *time.Time `json:"disabled_until_update"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	FailingSince   *time.Time `json:"failing_since"`
	LastSuccessAt  *time.Time `json:"last_success_at"`
	LastError      string     `json:"last_error,omitempty"`
	Status         string     `json:"status,omitempty"`
	RRule          string     `json:"rrule,omitempty"`
	// Pause is the operator's pause of the model (State is then "paused");
	// nil when it is not paused.
	Pause *refresher.PauseInfo `json:"pause,omitempty"`
}

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func item(r models.Row, now time.Time, lateAfter time.Duration) ModelItem {
	st := r.State
	return ModelItem{
		UID: r.Key, State: models.StateWord(st, now, lateAfter), RefreshAt: tp(st.RefreshAt), AttemptUID: st.AttemptUID,
		AttemptAt: tp(st.AttemptAt), AttemptNo: st.AttemptNo, TimeoutAt: tp(st.TimeoutAt),
		DisabledAt: tp(st.DisabledAt), DisabledReason: st.DisabledReason, FailingSince: tp(st.FailingSince),
		LastSuccessAt: tp(st.LastSuccessAt), LastError: st.LastError, Status: st.Status, RRule: r.Rule,
	}
}

// ModelPage is a page of GET /api/v1/kinds/{kind}/models.
type ModelPage struct {
	Items []ModelItem `json:"items"`
	// Next is the after= of the next page; "" on the last. With q= it is
	// set whenever rows remain to be searched, even on a page with fewer
	// items than the limit, or none.
	Next string `json:"next,omitempty"`
	// ScannedTo is set when a search (q=) stopped at its scan budget: the
	// last key it examined. Matches after it may exist: follow Next.
	ScannedTo string `json:"scanned_to,omitempty"`
	// Complete is true when no row remains after this page (Next is "").
	Complete bool `json:"complete"`
}

var listStates = map[string]models.RowState{
	"": models.StateAll, "all": models.StateAll, "due": models.StateDue, "late": models.StateLate,
	"running": models.StateRunning, "failing": models.StateFailing, "disabled": models.StateDisabled,
	"paused": statePaused,
}

// statePaused lists the models an operator paused, from the kind's paused
// models in Redis rather than the table.
const statePaused models.RowState = "paused"

// listQuery reads state, q, limit and after from the query string.
func (s *Server) listQuery(r *http.Request, k *Kind) (models.ListQuery, error) {
	v := r.URL.Query()
	state, ok := listStates[v.Get("state")]
	if !ok {
		return models.ListQuery{}, fmt.Errorf("state=%q: use due, late, running, failing, disabled, paused or all", v.Get("state"))
	}
	q := models.ListQuery{State: state, Now: s.o.Now(), LateAfter: k.LateAfter, Search: v.Get("q"), After: v.Get("after"), Limit: 50, ScanBudget: s.o.SearchBudget}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return q, fmt.Errorf("limit=%q: use a number from 1 to 1000", l)
		}
		q.Limit = n
	}
	return q, nil
}

func (s *Server) listModels(ctx context.Context, k *Kind, q models.ListQuery) (ModelPage, error) {
	paused, err := s.admin(k).PausedModels(ctx, k.Lists)
	if err != nil {
		return ModelPage{}, err
	}
	if q.State == statePaused {
		return s.listPaused(ctx, k, q, paused)
	}
	page, err := k.Store.List(ctx, k.Table, q)
	if err != nil {
		return ModelPage{}, err
	}
	p := ModelPage{Items: make([]ModelItem, 0, len(page.Rows)), Next: page.Next, ScannedTo: page.ScannedTo, Complete: page.Complete()}
	for _, r := range page.Rows {
		p.Items = append(p.Items, withPause(item(r, q.Now, k.LateAfter), paused))
	}
	return p, nil
}

func (s *Server) apiModels(w http.ResponseWriter, r *http.Request, k *Kind) {
	q, err := s.listQuery(r, k)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.listModels(r.Context(), k, q)
	if err != nil {
		s.internal(w, "list the models", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// ModelDetail is GET /api/v1/kinds/{kind}/models/{uid}.
type ModelDetail struct {
	Kind    string    `json:"kind"`
	Model   ModelItem `json:"model"`
	Summary string    `json:"summary"`
	// Timeline is what the schedule and the retry policy will do next
	// (during an incident, with its rule: failures do not count).
	Timeline Timeline `json:"timeline"`
	// Throttle is the model's throttle group while it is held; absent
	// otherwise.
	Throttle *ThrottleHold `json:"throttle,omitempty"`
	// Incident is the kind's incident; absent when there is none.
	Incident *refresher.IncidentState `json:"incident,omitempty"`
	// KindPause is the kind's own pause; absent when it is not paused.
	KindPause *refresher.PauseInfo `json:"kind_pause,omitempty"`
}

var errNoModel = errors.New("no such model")

// model reads one model by key, with the kind's throttle_group column of
// its payload (none when the kind names none): the last committed state,
// read without locking.
func (s *Server) model(ctx context.Context, k *Kind, uid string) (models.Row, error) {
	t := models.Table{Name: k.Table.Name, Key: k.Table.Key}
	if k.ThrottleGroup != "" {
		t.Payload = []string{k.ThrottleGroup}
	}
	row, ok, err := k.Store.Get(ctx, t, uid)
	if err == nil && !ok {
		err = errNoModel
	}
	return row, err
}

func (s *Server) modelDetail(ctx context.Context, k *Kind, uid string) (ModelDetail, error) {
	row, err := s.model(ctx, k, uid)
	if err != nil {
		return ModelDetail{}, err
	}
	paused, err := s.admin(k).PausedModels(ctx, k.Lists)
	if err != nil {
		return ModelDetail{}, err
	}
	now := s.o.Now()
	d := ModelDetail{Kind: k.Name, Model: withPause(item(row, now, k.LateAfter), paused)}
	if d.Throttle, err = s.throttleHold(ctx, k, row, now); err != nil {
		return ModelDetail{}, err
	}
	if d.Incident, err = s.kindIncident(ctx, k, now); err != nil {
		return ModelDetail{}, err
	}
	planned := *k
	planned.Policy.Incident = d.Incident != nil
	var heldUntil time.Time
	if d.Throttle != nil {
		heldUntil = d.Throttle.Until
	}
	if d.KindPause, err = s.admin(k).KindPause(ctx, k.Lists); err != nil {
		return ModelDetail{}, err
	}
	d.Timeline = heldTimeline(&planned, row, now, heldUntil)
	// What will not run as things stand: the plan says so.
	switch {
	case row.State.Disabled():
		d.Timeline.Blocked = "disabled"
	case d.Model.Pause != nil:
		d.Timeline.Blocked = "paused"
	case d.KindPause != nil:
		d.Timeline.Blocked = "kind paused"
	}
	if d.Timeline.Blocked != "" {
		d.Timeline.RetryPlan = []PlannedRetry{}
	}
	d.Summary = summary(row, d.Timeline, now, k.LateAfter, d.Model.Pause != nil)
	if !row.State.Disabled() {
		if d.Incident != nil {
			d.Summary = strings.TrimSuffix(d.Summary, " (UTC)") + "; " + incidentSummary(d.Incident) + " (UTC)"
		}
		if d.Throttle != nil {
			d.Summary = throttleSummary(d.Throttle, row.State, now) + "; " + d.Summary
		}
	}
	if p := d.Model.Pause; p != nil {
		d.Summary = pauseSummary(p, now) + "; " + d.Summary
	}
	if p := d.KindPause; p != nil && !row.State.Disabled() {
		d.Summary = "its kind is " + pausedBy(p, now) +
			"; nothing of the kind is dispatched until the kind is resumed; " + d.Summary
	}
	return d, nil
}

func (s *Server) apiModel(w http.ResponseWriter, r *http.Request, k *Kind) {
	d, err := s.modelDetail(r.Context(), k, modelKey(r))
	switch {
	case errors.Is(err, errNoModel):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no model %q in table %s", modelKey(r), k.Table.Name))
	case err != nil:
		s.internal(w, "read the model", err)
	default:
		writeJSON(w, http.StatusOK, d)
	}
}

// ChangeResult is the answer of an action on models.
type ChangeResult struct {
	UID   string    `json:"uid"`
	Found bool      `json:"found"`
	Note  string    `json:"note"`
	After ModelItem `json:"after"`
}

func (s *Server) apiEnable(w http.ResponseWriter, r *http.Request, k *Kind) {
	s.change(w, r, k, "enable", s.acting(r.Context(), k).Enable)
}

func (s *Server) apiTrigger(w http.ResponseWriter, r *http.Request, k *Kind) {
	if s.refusePaused(w, r, k, "a refresh now") {
		return
	}
	fn := s.acting(r.Context(), k).Trigger
	if p := r.URL.Query().Get("priority"); p != "" {
		level, err := priorityLevel(k, p)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		fn = s.acting(r.Context(), k).TriggerAt(&level)
	}
	s.change(w, r, k, "trigger", fn)
}

// priorityLevel reads the priority of a trigger: a level's name or a
// number (-32768 to 32767).
func priorityLevel(k *Kind, p string) (int, error) {
	if level, ok := k.PriorityLevels[p]; ok {
		return level, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < math.MinInt16 || n > math.MaxInt16 {
		names := slices.Sorted(maps.Keys(k.PriorityLevels))
		return 0, fmt.Errorf("priority=%q: use a level of priorities: (%s) or a number from -32768 to 32767", p, strings.Join(names, ", "))
	}
	return n, nil
}

type changeFunc func(context.Context, models.Table, []string, time.Time) ([]refresher.Change, error)

// change runs fn on the model {uid} and answers with what it did; decorate,
// when given, completes the item of the row after (the pause's note).
func (s *Server) change(w http.ResponseWriter, r *http.Request, k *Kind, what string, fn changeFunc, decorate ...func(*ModelItem)) {
	uid := modelKey(r)
	now := s.o.Now()
	changes, err := fn(r.Context(), k.Table, []string{uid}, now)
	if err != nil {
		s.internal(w, what+" the model", err)
		return
	}
	c := changes[0]
	if !c.Found {
		writeError(w, http.StatusNotFound, c.Note)
		return
	}
	s.o.Logger.Info("operator: "+what, "kind", k.Name, "uid", uid, "by", actor(r.Context()), "note", c.Note)
	s.invalidate()
	after := item(models.Row{Key: c.Key, State: c.After}, now, k.LateAfter)
	for _, d := range decorate {
		d(&after)
	}
	writeJSON(w, http.StatusOK, ChangeResult{UID: c.Key, Found: true, Note: c.Note, After: after})
}

// invalidate drops the cached overview and the counts after an action, so
// the dashboard shows its effect at once.
func (s *Server) invalidate() {
	s.mu.Lock()
	s.overview = nil
	s.mu.Unlock()
	s.o.Counter.Forget()
}

// decodeBody reads a JSON body of at most 64 KiB into v; an empty body
// leaves v as it is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && err.Error() != "EOF" {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}
