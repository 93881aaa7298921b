package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// evalAt evaluates expr with Prometheus's engine at instant at over series,
// each holding one value from a minute before at (within the lookback):
// the alert rules' expressions evaluated as the server would, without a
// TSDB.
func evalAt(t *testing.T, expr string, at time.Time, series map[string]float64) promql.Vector {
	t.Helper()
	var all []storage.Series
	for text, v := range series {
		ls, err := promqlLabels(text)
		if err != nil {
			t.Fatalf("series %s: %v", text, err)
		}
		all = append(all, storage.NewListSeries(ls, []chunks.Sample{point{t: at.Add(-time.Minute).UnixMilli(), f: v}}))
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 10000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})
	q, err := engine.NewInstantQuery(context.Background(), listQueryable(all), nil, expr, at)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s: %v", expr, res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// promqlLabels parses a series written as in PromQL: name{a="b",...}.
func promqlLabels(text string) (labels.Labels, error) {
	return parser.NewParser(parser.Options{}).ParseMetric(text)
}

// point is one float sample.
type point struct {
	t int64
	f float64
}

func (p point) T() int64                      { return p.t }
func (p point) ST() int64                     { return 0 }
func (p point) F() float64                    { return p.f }
func (p point) H() *histogram.Histogram       { return nil }
func (p point) FH() *histogram.FloatHistogram { return nil }
func (p point) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (p point) Copy() chunks.Sample           { return p }

// listQueryable serves a fixed list of series.
type listQueryable []storage.Series

func (l listQueryable) Querier(int64, int64) (storage.Querier, error) { return l, nil }

func (l listQueryable) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	out := &listSet{}
	for _, s := range l {
		ok := true
		for _, m := range ms {
			ok = ok && m.Matches(s.Labels().Get(m.Name))
		}
		if ok {
			out.series = append(out.series, s)
		}
	}
	return out
}

func (listQueryable) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (listQueryable) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (listQueryable) Close() error { return nil }

// listSet is a storage.SeriesSet over a slice.
type listSet struct {
	series []storage.Series
	i      int // the current series is series[i-1]
}

func (s *listSet) Next() bool                      { s.i++; return s.i <= len(s.series) }
func (s *listSet) At() storage.Series              { return s.series[s.i-1] }
func (*listSet) Err() error                        { return nil }
func (*listSet) Warnings() annotations.Annotations { return nil }
