package operator

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// The operator's pause (refresher.Admin's Pause and PauseKind): the API's
// actions and the paused state of the lists.

// admin is the operator's actions and reads on kind k (its database),
// shared with the CLI.
func (s *Server) admin(k *Kind) *refresher.Admin {
	return refresher.NewAdmin(k.Store, redisio.New(s.o.Redis))
}

// acting is admin for an action of the request whose context is ctx: with
// Options.Ledger, it records the action in the ledger as done by the
// request's token (its name; "api" on loopback without one).
func (s *Server) acting(ctx context.Context, k *Kind) *refresher.Admin {
	if !s.o.Ledger {
		return s.admin(k)
	}
	return s.admin(k).Recording(k.Name, cmp.Or(actor(ctx), "api"), s.o.Now)
}

// PauseRequest is the body of the pause actions; Note says why, for the
// other operators (at most 1000 characters). The name of the request's
// token is recorded as who paused.
type PauseRequest struct {
	Note string `json:"note"`
}

// maxNote bounds a pause's note.
const maxNote = 1000

func (s *Server) pauseRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/kinds/{kind}/models/{uid}/pause", s.authed(s.withKind(s.apiPauseModel)))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/models/{uid}/resume", s.authed(s.withKind(s.apiResumeModel)))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/pause", s.authed(s.withKind(s.apiPauseKind)))
	mux.HandleFunc("POST /api/v1/kinds/{kind}/resume", s.authed(s.withKind(s.apiResumeKind)))
}

// pauseInfo reads the request's note and makes the record of who paused.
func (s *Server) pauseInfo(r *http.Request) (refresher.PauseInfo, error) {
	var req PauseRequest
	if err := decodeBody(r, &req); err != nil {
		return refresher.PauseInfo{}, err
	}
	req.Note = strings.TrimSpace(req.Note)
	if len([]rune(req.Note)) > maxNote {
		return refresher.PauseInfo{}, fmt.Errorf("note: %d characters; keep it under %d", len([]rune(req.Note)), maxNote)
	}
	return refresher.PauseInfo{Note: req.Note, By: actor(r.Context()), At: s.o.Now().UTC()}, nil
}

func (s *Server) apiPauseModel(w http.ResponseWriter, r *http.Request, k *Kind) {
	info, err := s.pauseInfo(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.change(w, r, k, "pause", func(ctx context.Context, t models.Table, keys []string, _ time.Time) ([]refresher.Change, error) {
		return s.acting(ctx, k).Pause(ctx, t, k.Lists, keys, info)
	}, func(it *ModelItem) { it.State, it.Pause = "paused", &info })
}

func (s *Server) apiResumeModel(w http.ResponseWriter, r *http.Request, k *Kind) {
	if _, err := s.pauseInfo(r); err != nil { // a note is allowed, and checked, but not kept
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.change(w, r, k, "resume", func(ctx context.Context, t models.Table, keys []string, now time.Time) ([]refresher.Change, error) {
		return s.acting(ctx, k).Resume(ctx, t, k.Lists, keys, now, k.scheduleFor)
	})
}

// KindPauseResult is the answer of POST /api/v1/kinds/{kind}/pause and
// /resume.
type KindPauseResult struct {
	Kind   string               `json:"kind"`
	Paused bool                 `json:"paused"`
	Pause  *refresher.PauseInfo `json:"pause,omitempty"`
	Note   string               `json:"note"`
}

func (s *Server) apiPauseKind(w http.ResponseWriter, r *http.Request, k *Kind) {
	info, err := s.pauseInfo(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.acting(r.Context(), k).PauseKind(r.Context(), k.Lists, info); err != nil {
		s.internal(w, "pause the kind", err)
		return
	}
	s.o.Logger.Info("operator: pause kind", "kind", k.Name, "by", info.By, "note", info.Note)
	s.invalidate()
	writeJSON(w, http.StatusOK, KindPauseResult{Kind: k.Name, Paused: true, Pause: &info,
		Note: "paused: no instance dispatches " + k.Name + " until it is resumed; results still apply"})
}

func (s *Server) apiResumeKind(w http.ResponseWriter, r *http.Request, k *Kind) {
	if _, err := s.pauseInfo(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	was, err := s.acting(r.Context(), k).ResumeKind(r.Context(), k.Lists)
	if err != nil {
		s.internal(w, "resume the kind", err)
		return
	}
	s.o.Logger.Info("operator: resume kind", "kind", k.Name, "by", actor(r.Context()), "was_paused", was)
	s.invalidate()
	note := "resumed: the rows that became due meanwhile are dispatched, each once"
	if !was {
		note = "was not paused"
	}
	writeJSON(w, http.StatusOK, KindPauseResult{Kind: k.Name, Note: note})
}

// refusePaused answers 409 and returns true when the model {uid} is paused:
// what (a refresh now) would not happen until it is resumed.
func (s *Server) refusePaused(w http.ResponseWriter, r *http.Request, k *Kind, what string) bool {
	paused, err := s.admin(k).ModelPaused(r.Context(), k.Lists, modelKey(r))
	if err != nil {
		s.internal(w, "read the model's pause", err)
		return true
	}
	if paused {
		writeError(w, http.StatusConflict, fmt.Sprintf("model %q is paused by an operator: resume it first, or %s would not happen", modelKey(r), what))
	}
	return paused
}

// scheduleFor returns the schedule of a row whose refresh_rrule is rule
// ("": the kind's), nil when it has none that parses.
func (k *Kind) scheduleFor(key, rule string) policy.Nexter {
	return refresher.ResumeSchedules(k.Name, k.Schedule, k.Policy.Spread)(key, rule)
}

// listPaused lists a kind's paused models (state=paused): the keys of its
// paused-models hash, in byte order, filtered by q.Search on the key and
// the note, after q.After, up to q.Limit, read from the table.
func (s *Server) listPaused(ctx context.Context, k *Kind, q models.ListQuery, paused map[string]refresher.PauseInfo) (ModelPage, error) {
	keys := make([]string, 0, len(paused))
	search := strings.ToLower(q.Search)
	for key, p := range paused {
		if key <= q.After && q.After != "" {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(key), search) && !strings.Contains(strings.ToLower(p.Note), search) {
			continue
		}
		keys = append(keys, key)
	}
	sort.Strings(keys)
	next := ""
	if len(keys) > q.Limit {
		keys = keys[:q.Limit]
		next = keys[len(keys)-1]
	}
	page := ModelPage{Items: make([]ModelItem, 0, len(keys)), Next: next, Complete: next == ""}
	if len(keys) == 0 {
		return page, nil
	}
	var rows map[string]models.Row
	err := k.Store.Tx(ctx, func(tx models.Tx) error {
		var err error
		rows, err = tx.LockByKeys(ctx, k.Table, keys)
		return err
	})
	if err != nil {
		return page, err
	}
	for _, key := range keys {
		row, ok := rows[key]
		if !ok {
			row = models.Row{Key: key} // paused, then deleted by the application
		}
		page.Items = append(page.Items, withPause(item(row, q.Now, k.LateAfter), paused))
	}
	return page, nil
}

// withPause marks an item paused, with its note, when it is.
func withPause(it ModelItem, paused map[string]refresher.PauseInfo) ModelItem {
	if p, ok := paused[it.UID]; ok {
		it.State, it.Pause = "paused", &p
	}
	return it
}

// pauseSummary is the part of a model's summary that says it is paused.
func pauseSummary(p *refresher.PauseInfo, now time.Time) string {
	return pausedBy(p, now) + "; not dispatched until resumed"
}

// pausedBy says who paused, when and why: "paused by ops at 09:00: note".
func pausedBy(p *refresher.PauseInfo, now time.Time) string {
	s := "paused"
	if p.By != "" {
		s += " by " + p.By
	}
	if !p.At.IsZero() {
		s += " at " + clock(p.At, now)
	}
	if p.Note != "" {
		s += ": " + p.Note
	}
	return s
}
