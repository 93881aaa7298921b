package operator

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/ledgertest"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/refresher"
)

// withLedger serves the fixture's kind again on a second server whose
// store keeps a ledger (in memory, ledgertest) holding the history of the
// model hist-1, which it adds: refreshed on Mar 3; on Mar 4 the kind was
// paused over its 02:00 run, which then failed once and succeeded on the
// retry. It returns the second server's URL.
func (f *fixture) withLedger() string {
	t := f.t
	ctx := context.Background()
	at := func(d, h, m, s int) time.Time { return time.Date(2026, 3, d, h, m, s, 0, time.UTC) }
	hist := models.Row{Key: "hist-1", State: policy.State{RefreshAt: at(5, 2, 0, 0), LastSuccessAt: at(4, 2, 22, 0), AttemptAt: at(4, 2, 21, 30)}}
	if _, err := f.store.DB().Exec("INSERT INTO items (uid, host) VALUES ('hist-1', NULL)"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, f.kind.Table, []models.Row{hist}) }); err != nil {
		t.Fatal(err)
	}
	e := func(ev policy.Event, when time.Time, fill func(*policy.Entry)) policy.Entry {
		x := policy.Entry{At: when, Kind: "items", Key: "hist-1", Event: ev}
		if fill != nil {
			fill(&x)
		}
		return x
	}
	ledger := ledgertest.New(f.store,
		e(policy.EventDispatched, at(3, 2, 0, 1), func(x *policy.Entry) { x.Attempt, x.Planned = "a0", at(3, 2, 0, 0) }),
		e(policy.EventSucceeded, at(3, 2, 0, 40), func(x *policy.Entry) { x.Attempt, x.Next = "a0", at(4, 2, 0, 0) }),
		e(policy.EventPaused, at(4, 1, 55, 0), func(x *policy.Entry) { x.Key, x.Whole, x.By, x.Note = "", true, "ops", "incident 42" }),
		e(policy.EventResumed, at(4, 2, 20, 0), func(x *policy.Entry) { x.Key, x.Whole, x.By = "", true, "ops" }),
		e(policy.EventDispatched, at(4, 2, 20, 0), func(x *policy.Entry) { x.Attempt, x.Planned = "a1", at(4, 2, 0, 0) }),
		e(policy.EventFailed, at(4, 2, 20, 30), func(x *policy.Entry) {
			x.Attempt, x.Reason, x.Next, x.Bound = "a1", "HTTP 503 from upstream", at(4, 2, 21, 30), policy.BoundRetryList
		}),
		e(policy.EventDispatched, at(4, 2, 21, 30), func(x *policy.Entry) { x.Attempt, x.Planned = "a2", at(4, 2, 21, 30) }),
		e(policy.EventSucceeded, at(4, 2, 22, 0), func(x *policy.Entry) { x.Attempt, x.Next = "a2", at(5, 2, 0, 0) }),
	)
	k := f.kind
	k.Store = ledger
	srv, err := New(Options{Kinds: []Kind{k}, Store: f.store, Redis: f.rdb, Tokens: map[string]string{"ops": testToken},
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	return h.URL
}

// whyHist is the answer about hist-1's run of Mar 4 02:00.
const whyHist = "Mar 4 02:00 UTC was planned. It was not dispatched at 02:00: the kind was paused from 01:55 to 02:20 by ops ('incident 42'). " +
	"It was dispatched at 02:20 and failed at 02:20:30 (HTTP 503 from upstream); the retry list planned a retry at 02:21:30, which succeeded at 02:22."

// TestWhyAPI: GET .../models/{uid}/why?at= answers the sentence and the
// entries it is built on; a bad time is a 400, an unknown model a 404, and
// a store that keeps no ledger a 501 that says so.
func TestWhyAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"ops": testToken})
	base := f.withLedger()
	get := func(u string, out any) int {
		t.Helper()
		g := &fixture{t: t, http: &httptest.Server{URL: base}}
		return g.do("GET", u, "", nil, out)
	}
	var rep refresher.WhyReport
	require.Equal(t, http.StatusOK, get("/api/v1/kinds/items/models/hist-1/why?at="+url.QueryEscape("2026-03-04T02:10:00Z"), &rep))
	require.Equal(t, whyHist, rep.Sentence)
	require.Equal(t, "succeeded", rep.Cause)
	require.Equal(t, "UTC", rep.TimeZone)
	require.Equal(t, time.Date(2026, 3, 4, 2, 0, 0, 0, time.UTC), *rep.Occurrence)
	require.Len(t, rep.Entries, 6)
	require.Nil(t, rep.Entries[0].UID, "the kind's pause")
	require.Equal(t, "paused", rep.Entries[0].Event)
	require.Equal(t, "ops", rep.Entries[0].By)

	var e map[string]string
	require.Equal(t, http.StatusBadRequest, get("/api/v1/kinds/items/models/hist-1/why?at=yesterday", &e))
	require.Contains(t, e["error"], `at="yesterday": use RFC 3339`)
	require.Equal(t, http.StatusNotFound, get("/api/v1/kinds/items/models/ghost/why", &e))
	require.Equal(t, `no model "ghost" in table items`, e["error"])
	require.Equal(t, http.StatusNotImplemented, f.do("GET", "/api/v1/kinds/items/models/ok-1/why", "", nil, &e))
	require.Equal(t, "kind items: its database's store keeps no ledger, so there is no history to explain", e["error"])
}

// TestPlanThatWillNotRun: a disabled model, a paused model and a model of
// a paused kind say that their plan will not run (Timeline.Blocked, no
// retry plan), and their page draws the occurrences as "will not run",
// never as green planned dots.
func TestPlanThatWillNotRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"ops": testToken})
	detail := func(uid string) ModelDetail {
		var d ModelDetail
		require.Equal(t, http.StatusOK, f.do("GET", "/api/v1/kinds/items/models/"+uid, "", nil, &d))
		return d
	}
	page := func(uid string) string {
		resp, err := http.Get(f.http.URL + "/kinds/items/models/" + uid)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "", detail("ok-1").Timeline.Blocked)
	require.Contains(t, page("ok-1"), `class="ev ev-occurrence"`)

	d := detail("off-3")
	require.Equal(t, "disabled", d.Timeline.Blocked)
	require.NotEmpty(t, d.Timeline.Occurrences, "the schedule's occurrences stay listed")
	p := page("off-3")
	require.NotContains(t, p, `class="ev ev-occurrence"`)
	require.Contains(t, p, `class="ev ev-blocked"`)
	require.Contains(t, p, "will not run: the model is disabled until the user updates it or an operator enables it")
	require.Contains(t, p, "No history: this kind's database keeps no ledger.")

	require.Equal(t, http.StatusOK, f.do("POST", "/api/v1/kinds/items/models/ok-1/pause", testToken, map[string]string{"note": "migration"}, nil))
	d = detail("ok-1")
	require.Equal(t, "paused", d.Timeline.Blocked)
	require.Empty(t, d.Timeline.RetryPlan)
	require.NotContains(t, page("ok-1"), `class="ev ev-occurrence"`)

	require.Equal(t, http.StatusOK, f.do("POST", "/api/v1/kinds/items/pause", testToken, map[string]string{"note": "incident 42"}, nil))
	d = detail("failing-1")
	require.Equal(t, "kind paused", d.Timeline.Blocked)
	require.Empty(t, d.Timeline.RetryPlan)
	require.Equal(t, "incident 42", d.KindPause.Note)
	require.True(t, strings.HasPrefix(d.Summary, "its kind is paused by ops at 14:00: incident 42; nothing of the kind is dispatched"), d.Summary)
	p = page("failing-1")
	require.Contains(t, p, `id="kind-pause-box"`)
	require.Contains(t, p, "not while paused")
	require.Contains(t, p, "will not run: the kind is paused until it is resumed")
}

// The model's history shows its last success from the row's column when
// no entry names it (a routine success is counted in its batch), in time
// order; once, when an entry names it; not when older than the range.
func TestHistoryShowsTheLastSuccess(t *testing.T) {
	t.Parallel()
	at := func(m int) time.Time { return time.Date(2026, 11, 25, 9, m, 0, 0, time.UTC) }
	ev := func(m int, label string) HistoryEvent { return HistoryEvent{At: at(m), Label: label} }
	got := withLastSuccess([]HistoryEvent{ev(1, "failed"), ev(30, "paused")}, at(10), at(0))
	require.Equal(t, []string{"failed", "succeeded", "paused"}, []string{got[0].Label, got[1].Label, got[2].Label})
	require.Equal(t, at(10), got[1].At)
	require.Len(t, withLastSuccess([]HistoryEvent{ev(10, "succeeded")}, at(10), at(0)), 1, "named by an entry")
	require.Empty(t, withLastSuccess(nil, at(10), at(20)), "before the range")
	require.Empty(t, withLastSuccess(nil, time.Time{}, at(0)), "no success")
}
