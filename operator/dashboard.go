package operator

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/refresher"
)

// The dashboard's templates and assets, compiled into the binary: no CDN and
// no build step. app.js is plain JavaScript.
//
//go:embed web
var webFS embed.FS

var pages = map[string]*template.Template{}

// shownCount is a state's count on the overview: N, and whether it is the
// database's estimate (more than models.ExactStateUpTo rows). MoreThanCap:
// the estimate said no more than the cap (statistics older than the rows,
// e.g. refresh_at's after a burst), so all that is known is "more than
// Cap", which the page shows instead of the figure.
type shownCount struct {
	N                      int64
	Estimated, MoreThanCap bool
	Cap                    int64
}

// countOf is the overview's count of state in k, n.
func countOf(k KindSummary, state string, n int64) shownCount {
	c := shownCount{N: n, Estimated: k.IsEstimated(state), Cap: models.ExactStateUpTo}
	c.MoreThanCap = c.Estimated && n <= c.Cap+1
	return c
}

func init() {
	funcs := template.FuncMap{
		"path":     url.PathEscape,
		"keypath":  keySegment,
		"keybreak": keyBreaks,
		"when": func(t *time.Time) string {
			if t == nil {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"countOf": countOf,
		"age": func(sec float64) string {
			if sec <= 0 {
				return "—"
			}
			return policy.FormatDuration(time.Duration(sec) * time.Second)
		},
	}
	for _, p := range []string{"overview", "kind", "model", "dead", "bulk", "error"} {
		pages[p] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(webFS, "web/templates/layout.html", "web/templates/charts.html", "web/templates/"+p+".html"))
	}
}

func (s *Server) dashboardRoutes(mux *http.ServeMux) {
	static, _ := fs.Sub(webFS, "web/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.pageOverview)
	mux.HandleFunc("GET /kinds/{kind}", s.withKindPage(s.pageKind))
	mux.HandleFunc("GET /kinds/{kind}/models/{uid}", s.withKindPage(s.pageModel))
	mux.HandleFunc("GET /kinds/{kind}/dead", s.withKindPage(s.pageDead))
	mux.HandleFunc("GET /kinds/{kind}/bulk", s.withKindPage(s.pageBulk))
	// Every other path outside /api/ is a page that does not exist: an HTML
	// answer for the browser (the API answers JSON of its own).
	mux.HandleFunc("/", s.pageNotFound)
}

// withKindPage is withKind for pages: an unknown kind gets an HTML 404.
func (s *Server) withKindPage(h kindHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, ok := s.kinds[r.PathValue("kind")]
		if !ok {
			s.pageError(w, http.StatusNotFound, fmt.Sprintf("No kind %q is configured.", r.PathValue("kind")))
			return
		}
		h(w, r, k)
	}
}

// pageNotFound answers a path no page has, and a page asked with a method
// other than GET.
func (s *Server) pageNotFound(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.pageError(w, http.StatusMethodNotAllowed, fmt.Sprintf("The pages are read with GET, not %s; actions are under /api/v1/.", r.Method))
		return
	}
	s.pageError(w, http.StatusNotFound, fmt.Sprintf("No page at %s.", r.URL.Path))
}

// keyBreaks is key as HTML with a line-break opportunity (<wbr>) after
// each separator (- / _ . :), so that a narrow column wraps a long key
// between its parts rather than inside a word; the CSS breaks anywhere only
// a part wider than the line. The empty key shows as "(empty key)", so that
// its link can be seen and clicked.
func keyBreaks(key string) template.HTML {
	if key == "" {
		return `<em class="empty-key">(empty key)</em>`
	}
	var b strings.Builder
	for {
		i := strings.IndexAny(key, "-/_.:")
		if i < 0 {
			b.WriteString(template.HTMLEscapeString(key))
			return template.HTML(b.String())
		}
		b.WriteString(template.HTMLEscapeString(key[:i+1]))
		if i+1 < len(key) {
			b.WriteString("<wbr>")
		}
		key = key[i+1:]
	}
}

// page is what every template gets.
type page struct {
	Title    string
	Kind     *Kind
	ReadOnly bool
	// Reader is the name of the token of role read the viewer reads with
	// (HTTP Basic, when reads need a token); empty otherwise.
	Reader string
	// CanAct says whether the page offers its actions: the server has a
	// token of role act and the viewer does not read with a token of role
	// read. Actions need a token of role act in any case.
	CanAct bool
	Now    time.Time
	Data   any
}

// renderFor renders the page for the viewer of r: without the actions a
// viewer who reads with a token of role read may not take.
func (s *Server) renderFor(w http.ResponseWriter, r *http.Request, name string, status int, p page) {
	if n, role := s.auth.viewer(r); role == RoleRead {
		p.Reader = n
	}
	s.render(w, name, status, p)
}

func (s *Server) render(w http.ResponseWriter, name string, status int, p page) {
	p.ReadOnly = s.auth.readOnly()
	p.CanAct = !p.ReadOnly && p.Reader == ""
	p.Now = s.o.Now().UTC()
	var b bytes.Buffer
	if err := pages[name].Execute(&b, p); err != nil {
		s.o.Logger.Error("operator: render page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered; the service log has the detail", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// pageError answers an HTML page that says msg, with a way back to the
// overview.
func (s *Server) pageError(w http.ResponseWriter, status int, msg string) {
	s.render(w, "error", status, page{Title: http.StatusText(status), Data: errorData{Status: status, Message: msg}})
}

type errorData struct {
	Status  int
	Message string
}

type overviewData struct {
	Kinds     []KindSummary
	CountedAt time.Time
	Error     string
	// Charts are every kind's activity added up (charts.go).
	Charts chartsView
}

func (s *Server) pageOverview(w http.ResponseWriter, r *http.Request) {
	sums, at, err := s.overviewCached(r.Context())
	d := overviewData{Kinds: sums, CountedAt: at.UTC(), Charts: s.charts(r, nil, "/")}
	if err != nil {
		s.o.Logger.Error("operator: overview", "err", err)
		d.Error = "The models could not be counted; the service log has the detail."
	}
	s.renderFor(w, r, "overview", http.StatusOK, page{Title: "Kinds", Data: d})
}

type kindData struct {
	States []string
	State  string
	Query  string
	Page   ModelPage
	After  string
	Error  string
	// KindPause is the kind's own pause; nil when not paused.
	KindPause *refresher.PauseInfo
	// Charts are the kind's activity (charts.go).
	Charts chartsView
}

func (s *Server) pageKind(w http.ResponseWriter, r *http.Request, k *Kind) {
	d := kindData{States: []string{"all", "due", "late", "running", "failing", "disabled", "paused"},
		State: r.URL.Query().Get("state"), Query: r.URL.Query().Get("q"), After: r.URL.Query().Get("after")}
	if d.State == "" {
		d.State = "all"
	}
	q, err := s.listQuery(r, k)
	if err != nil {
		d.Error = err.Error()
	} else if d.Page, err = s.listModels(r.Context(), k, q); err != nil {
		s.o.Logger.Error("operator: list models", "err", err)
		d.Error = "The models could not be listed; the service log has the detail."
	}
	if p, err := s.admin(k).KindPause(r.Context(), k.Lists); err != nil {
		s.o.Logger.Error("operator: read the kind's pause", "err", err)
		d.Error = "The kind's pause could not be read; the service log has the detail."
	} else {
		d.KindPause = p
	}
	d.Charts = s.charts(r, k, "/kinds/"+url.PathEscape(k.Name))
	s.renderFor(w, r, "kind", http.StatusOK, page{Title: k.Name, Kind: k, Data: d})
}

type modelData struct {
	Detail  ModelDetail
	SVG     timelineSVG
	Actions modelActions
	// History is the model's past from the ledger, oldest first;
	// Ledger is false when the kind's store keeps none.
	History []HistoryEvent
	Ledger  bool
	// HistoryError says the ledger could not be read.
	HistoryError string
	// WhyAt is the form's time (?at=); Why its answer, WhyError why
	// there is none.
	WhyAt    string
	Why      *refresher.WhyReport
	WhyError string
}

// modelActions are the buttons the model page shows: only the actions that
// would change the model in its state. Pause and Resume follow the pause.
type modelActions struct {
	// Enable: the model is disabled (refresher.Enable re-enables it).
	Enable bool
	// Trigger ("Refresh now"): the model waits for a later refresh_at, or
	// for none, and is neither running, disabled (Enable does that) nor
	// paused (the API refuses it then).
	Trigger bool
	// Hint says why neither applies, when that is so.
	Hint string
}

// kindPaused: the whole kind is paused, so a due model waits for its
// resume, not for the next dispatch.
func actionsFor(m ModelItem, kindPaused bool, now time.Time) modelActions {
	var a modelActions
	switch {
	case m.DisabledAt != nil:
		a.Enable = true
	case m.Pause != nil:
		a.Hint = "paused: resume it to refresh it"
	case m.AttemptUID != "":
		a.Hint = "an attempt is running: a refresh now would not start a second one"
	case m.RefreshAt != nil && !m.RefreshAt.After(now) && kindPaused:
		a.Hint = "already due: the first dispatch after the kind is resumed starts it"
	case m.RefreshAt != nil && !m.RefreshAt.After(now):
		a.Hint = "already due: the next dispatch starts it"
	default:
		a.Trigger = true
	}
	return a
}

func (s *Server) pageModel(w http.ResponseWriter, r *http.Request, k *Kind) {
	d, err := s.modelDetail(r.Context(), k, modelKey(r))
	if err != nil {
		if err == errNoModel {
			s.pageError(w, http.StatusNotFound, fmt.Sprintf("No model %q in table %s.", modelKey(r), k.Table.Name))
			return
		}
		s.o.Logger.Error("operator: read model", "err", err)
		s.pageError(w, http.StatusInternalServerError, "The model could not be read; the service log has the detail.")
		return
	}
	now := s.o.Now()
	md := modelData{Detail: d, Actions: actionsFor(d.Model, d.KindPause != nil, now), WhyAt: r.URL.Query().Get("at")}
	row := models.Row{Key: d.Model.UID, Rule: d.Model.RRule}
	var err2 error
	if md.History, md.Ledger, err2 = s.history(r.Context(), k, row, now); err2 != nil {
		s.o.Logger.Error("operator: read the ledger", "kind", k.Name, "err", err2)
		md.HistoryError = "The ledger could not be read; the service log has the detail."
	}
	if md.WhyAt != "" {
		at, err := parseWhyAt(md.WhyAt, now)
		if err == nil {
			var rep refresher.WhyReport
			if rep, err = s.why(r.Context(), k, d.Model.UID, at, now); err == nil {
				md.Why = &rep
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, refresher.ErrNoLedger):
			md.WhyError = "This kind's database keeps no ledger, so there is no history to explain."
		case strings.HasPrefix(err.Error(), "at="):
			md.WhyError = err.Error()
		default:
			s.o.Logger.Error("operator: explain the model", "kind", k.Name, "err", err)
			md.WhyError = "The ledger could not be read; the service log has the detail."
		}
	}
	md.SVG = drawTimeline(d.Timeline, d.Throttle, md.History, now)
	s.renderFor(w, r, "model", http.StatusOK, page{Title: d.Model.UID, Kind: k, Data: md})
}

type deadData struct {
	Total int64
	Items []DeadLetter
	Error string
}

func (s *Server) pageDead(w http.ResponseWriter, r *http.Request, k *Kind) {
	total, items, err := s.deadLetters(r.Context(), k, 0, 100)
	d := deadData{Total: total, Items: items}
	if err != nil {
		s.o.Logger.Error("operator: dead letters", "err", err)
		d.Error = "The dead letters could not be read; the service log has the detail."
	}
	s.renderFor(w, r, "dead", http.StatusOK, page{Title: k.Name + " dead letters", Kind: k, Data: d})
}

func (s *Server) pageBulk(w http.ResponseWriter, r *http.Request, k *Kind) {
	s.renderFor(w, r, "bulk", http.StatusOK, page{Title: k.Name + " bulk re-enable", Kind: k,
		Data: map[string]string{"ReasonLike": r.URL.Query().Get("reason_like")}})
}

// timelineSVG is a model's timeline laid out for the template: its events
// in time order, evenly spaced (times differ by seconds or by months, so
// an even spacing reads better than a linear scale), with "now" among them.
type timelineSVG struct {
	Width, Height int
	Points        []svgPoint
}

type svgPoint struct {
	X, Y        int
	LabelY      int
	Kind, Label string
	Time        string
	Up          bool
}

// drawTimeline lays out tl at now, after the last events of history (the
// past, from the ledger); hold, when not nil, adds the end of the model's
// throttle hold. When the plan will not run (tl.Blocked), its next refresh
// and occurrences are drawn as such ("will not run"), not as planned.
func drawTimeline(tl Timeline, hold *ThrottleHold, history []HistoryEvent, now time.Time) timelineSVG {
	type ev struct {
		at         time.Time
		kind, what string
	}
	var evs []ev
	if len(history) > historyOnTimeline {
		history = history[len(history)-historyOnTimeline:]
	}
	for _, h := range history {
		evs = append(evs, ev{h.At, "h-" + h.Class, h.Label})
	}
	if tl.LastAttempt != nil && len(history) == 0 {
		evs = append(evs, ev{*tl.LastAttempt, "past", "last attempt"})
	}
	evs = append(evs, ev{now, "now", "now"})
	planned, next := ev{kind: "occurrence", what: "planned"}, ev{kind: "next", what: "next refresh"}
	if tl.Blocked != "" {
		planned = ev{kind: "blocked", what: "will not run"}
		next = ev{kind: "blocked", what: "not while " + strings.TrimPrefix(tl.Blocked, "kind ")}
	}
	if tl.NextRefresh != nil {
		next.at = *tl.NextRefresh
		evs = append(evs, next)
	}
	if hold != nil {
		evs = append(evs, ev{hold.Until, "held", "hold ends"})
	}
	for _, o := range tl.Occurrences {
		planned.at = o
		evs = append(evs, planned)
	}
	for _, p := range tl.RetryPlan {
		if p.Decision == string(policy.BranchDisabled) {
			evs = append(evs, ev{p.StartedAt, "disabled", fmt.Sprintf("disabled after %d", p.AttemptNo)})
		} else if p.RefreshAt != nil {
			evs = append(evs, ev{*p.RefreshAt, "retry", fmt.Sprintf("try %d", p.AttemptNo+1)})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	svg := timelineSVG{Width: 800, Height: 120}
	step := 0
	if len(evs) > 1 {
		step = (svg.Width - 100) / (len(evs) - 1)
	}
	for i, e := range evs {
		up := i%2 == 0
		p := svgPoint{X: 50 + i*step, Y: 60, Kind: e.kind, Label: e.what, Time: clock(e.at, now), Up: up}
		p.LabelY = 30
		if !up {
			p.LabelY = 88
		}
		svg.Points = append(svg.Points, p)
	}
	return svg
}
