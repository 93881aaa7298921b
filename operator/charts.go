package operator

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// chartTTL is how long the dashboard reuses an activity read from Redis
// (60 or 144 hashes per kind, in one round trip): the overview refreshes
// every 5 seconds, and a minute's counts change little meanwhile.
const chartTTL = 15 * time.Second

// chartCache keeps the activities read lately, by span and kind ("" for the
// overview's sum). Its age is the wall clock's (pacing only).
type chartCache struct {
	mu      sync.Mutex
	entries map[string]chartEntry
}

type chartEntry struct {
	act  refresher.Activity
	read time.Time
}

// activity returns the activity of kind k (nil: every kind, added up) over
// span ending at now, from the cache when read less than chartTTL ago.
func (s *Server) activity(ctx context.Context, k *Kind, span refresher.Span, now time.Time) (refresher.Activity, error) {
	key := span.Name + "/"
	var lists []redisio.Lists
	if k != nil {
		key += k.Name
		lists = []redisio.Lists{k.Lists}
	} else {
		for _, name := range s.order {
			lists = append(lists, s.kinds[name].Lists)
		}
	}
	c := &s.chartCache
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && time.Since(e.read) < chartTTL {
		return e.act, nil
	}
	acts, err := refresher.NewAdmin(nil, redisio.New(s.o.Redis)).Activity(ctx, lists, span, now)
	if err != nil {
		return refresher.Activity{}, err
	}
	act := refresher.SumActivity(span, acts)
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]chartEntry{}
	}
	c.entries[key] = chartEntry{act: act, read: time.Now()}
	c.mu.Unlock()
	return act, nil
}

// chartSpan is the span a page asks for with ?span=: "day", or the hour.
func chartSpan(r *http.Request) refresher.Span {
	if r.URL.Query().Get("span") == refresher.LastDay.Name {
		return refresher.LastDay
	}
	return refresher.LastHour
}

// chartsView is the charts partial's data: one small chart per series over
// the span, with the paused and incident steps marked on each.
type chartsView struct {
	// Span is "hour" or "day"; Path the page's path, for the span's links,
	// which keep the page's other parameters (Keep: the state tab and the
	// search, encoded).
	Span, Path string
	Keep       template.URL
	// All: the overview's charts, every kind added up.
	All   bool
	Spans []string
	// Step says what a bar is ("minute", "ten minutes").
	Step string
	// From and To are the first and the last bar's start.
	From, To string
	// Ticks are the times marked along each chart's axis between From and
	// To (quarter hours, or every six hours), so that a mark's time can be
	// read without hovering.
	Ticks  []chartTick
	Charts []chartSVG
	// Marked says when the kind was paused or in an incident, in words
	// ("paused 13:15–13:25"), under the charts.
	Marked []string
	// Quiet: nothing in the span (no count, no backlog, no mark), which
	// the charts alone show as empty boxes.
	Quiet bool
	Error string
}

// chartTick is a time on the charts' axis, at X in the viewBox.
type chartTick struct {
	X, Text string
}

// chartSVG is one chart laid out for the template, in a viewBox of Width x
// Height.
type chartSVG struct {
	ID, Title, Label string
	Width, Height    int
	Max, Last        string
	Bars             []chartBar
	Marks            []chartMark
	// PlotTop and PlotBottom bound the bars (y); a tick runs from
	// PlotBottom down to TickBottom.
	PlotTop, PlotBottom, TickBottom int
}

type chartBar struct {
	X, Y, W, H string
	At, Text   string
	Value      int64
}

// chartMark is a run of steps paused or in an incident: From and To are the
// first and last step's start ("15:04"), Until the last step's end; First
// and Last say that the run starts at the span's first step (it may have
// begun earlier) or goes on at its last (now).
type chartMark struct {
	Kind            string
	X, W, Y, H      string
	From, To, Until string
	First, Last     bool
}

// run says when the mark was, in words, for the line under the charts.
func (m chartMark) run(span string) string {
	switch {
	case m.First && m.Last:
		return m.Kind + " all the last " + span
	case m.First:
		return m.Kind + " until " + m.Until + " (since before " + m.From + ")"
	case m.Last:
		return m.Kind + " since " + m.From + ", still"
	}
	return m.Kind + " " + m.From + "–" + m.Until
}

const (
	chartWidth  = 320
	chartHeight = 112
	plotTop     = 20
	plotBottom  = 94
	// barTop leaves the marks' stripe above the tallest bar, so that a
	// mark shows behind full bars too.
	barTop = plotTop + 6
)

// series are the charts, in order: id, title, and the value of a step.
var series = []struct {
	id, title string
	value     func(redisio.StatsPoint) int64
	text      func(int64) string
}{
	{"dispatched", "Dispatched", func(p redisio.StatsPoint) int64 { return p.Dispatched }, count},
	{"applied", "Applied", func(p redisio.StatsPoint) int64 { return p.Applied }, count},
	{"failed", "Failed", func(p redisio.StatsPoint) int64 { return p.Failed }, count},
	{"dead", "Dead-lettered", func(p redisio.StatsPoint) int64 { return p.Dead }, count},
	{"backlog", "Due backlog (highest)", func(p redisio.StatsPoint) int64 { return p.Backlog }, count},
	{"lateness", "Lateness: oldest due waited", func(p redisio.StatsPoint) int64 { return p.LatenessSeconds }, seconds},
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

func seconds(n int64) string {
	if n <= 0 {
		return "0"
	}
	return policy.FormatDuration(time.Duration(n) * time.Second)
}

// drawCharts lays out act for the charts partial of the page at path.
func drawCharts(act refresher.Activity, path string) chartsView {
	v := chartsView{Span: act.Span.Name, Path: path, Spans: []string{refresher.LastHour.Name, refresher.LastDay.Name}, Step: "minute"}
	if act.Span.Step != time.Minute {
		v.Step = "ten minutes"
	}
	n := len(act.Points)
	if n == 0 {
		return v
	}
	at := func(i int) time.Time { return act.Start.Add(time.Duration(i) * act.Span.Step) }
	v.From, v.To = at(0).Format("15:04"), at(n-1).Format("15:04")
	if act.Span.Step != time.Minute {
		v.From = at(0).Format("Mon 15:04")
	}
	w := float64(chartWidth) / float64(n)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	marks := marksOf(act, w, f)
	v.Ticks = ticksOf(act, w, f)
	v.Quiet = true
	for _, p := range act.Points {
		if p != (redisio.StatsPoint{}) {
			v.Quiet = false
			break
		}
	}
	for _, m := range marks {
		v.Marked = append(v.Marked, m.run(act.Span.Name))
	}
	for _, s := range series {
		c := chartSVG{ID: s.id, Title: s.title, Width: chartWidth, Height: chartHeight, PlotTop: plotTop, PlotBottom: plotBottom, TickBottom: plotBottom + 4, Marks: marks}
		var top int64
		for _, p := range act.Points {
			top = max(top, s.value(p))
		}
		c.Max, c.Last = s.text(top), s.text(s.value(act.Points[n-1]))
		for i, p := range act.Points {
			val := s.value(p)
			if val <= 0 {
				continue
			}
			h := float64(plotBottom-barTop) * float64(val) / float64(top)
			c.Bars = append(c.Bars, chartBar{X: f(float64(i) * w), W: f(max(w-0.6, 0.8)), Y: f(plotBottom - h), H: f(h),
				At: at(i).Format("15:04"), Text: s.text(val), Value: val})
		}
		c.Label = fmt.Sprintf("%s per %s over the last %s, %s to %s: highest %s, last %s%s",
			s.title, v.Step, v.Span, v.From, v.To, c.Max, c.Last, marksText(marks))
		v.Charts = append(v.Charts, c)
	}
	return v
}

// marksOf returns the runs of steps paused and in an incident.
func marksOf(act refresher.Activity, w float64, f func(float64) string) []chartMark {
	var marks []chartMark
	for _, kind := range []string{"paused", "incident"} {
		on := func(p redisio.StatsPoint) bool {
			if kind == "paused" {
				return p.Paused
			}
			return p.Incident
		}
		for i := 0; i < len(act.Points); {
			if !on(act.Points[i]) {
				i++
				continue
			}
			j := i
			for j+1 < len(act.Points) && on(act.Points[j+1]) {
				j++
			}
			marks = append(marks, chartMark{Kind: kind, X: f(float64(i) * w), W: f(float64(j-i+1) * w),
				Y: strconv.Itoa(plotTop), H: strconv.Itoa(plotBottom - plotTop),
				From:  act.Start.Add(time.Duration(i) * act.Span.Step).Format("15:04"),
				To:    act.Start.Add(time.Duration(j) * act.Span.Step).Format("15:04"),
				Until: act.Start.Add(time.Duration(j+1) * act.Span.Step).Format("15:04"),
				First: i == 0, Last: j == len(act.Points)-1})
			i = j + 1
		}
	}
	return marks
}

// ticksOf returns the axis' times between the first and the last step:
// every quarter hour over the hour, every six hours over the day; none
// near either end, where From ("Tue 14:10" over the day) and To are
// written.
func ticksOf(act refresher.Activity, w float64, f func(float64) string) []chartTick {
	every := 15 * time.Minute
	if act.Span.Step != time.Minute {
		every = 6 * time.Hour
	}
	var ticks []chartTick
	n := len(act.Points)
	for i := range n {
		at := act.Start.Add(time.Duration(i) * act.Span.Step)
		x := (float64(i) + 0.5) * w
		if at.Sub(at.Truncate(every)) != 0 || x < chartWidth/5 || x > chartWidth-chartWidth/5 {
			continue
		}
		ticks = append(ticks, chartTick{X: f(x), Text: at.Format("15:04")})
	}
	return ticks
}

func marksText(marks []chartMark) string {
	s := ""
	for _, m := range marks {
		s += fmt.Sprintf("; %s %s to %s", m.Kind, m.From, m.Until)
	}
	return s
}

// charts reads and lays out the charts of kind k (nil: every kind) for the
// page of r at path.
func (s *Server) charts(r *http.Request, k *Kind, path string) chartsView {
	span := chartSpan(r)
	act, err := s.activity(r.Context(), k, span, s.o.Now())
	if err != nil {
		s.o.Logger.Error("operator: read the activity for the charts", "err", err)
		v := chartsView{Span: span.Name, Path: path, Spans: []string{refresher.LastHour.Name, refresher.LastDay.Name}, All: k == nil}
		v.Error = "The activity could not be read; the service log has the detail."
		return v
	}
	v := drawCharts(act, path)
	v.All = k == nil
	q := r.URL.Query()
	q.Del("span")
	q.Del("after") // a page of the list further on: the span's link starts it again
	v.Keep = template.URL(q.Encode())
	return v
}
