package main

import (
	"slices"
	"testing"
)

func TestScalingSizes(t *testing.T) {
	for _, c := range []struct {
		o    options
		want []int64
	}{
		{options{}, []int64{100_000, 1_000_000}},
		{options{huge: true}, []int64{100_000, 1_000_000, 10_000_000}},
		{options{huge: true, scalingRows: "20_000, 5000000"}, []int64{20_000, 5_000_000}},
	} {
		got, err := c.o.scalingSizes()
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, %v; want %v", c.o, got, err, c.want)
		}
	}
	if _, err := (options{scalingRows: "100k"}).scalingSizes(); err == nil {
		t.Error("100k accepted")
	}
}

func TestExplainSummary(t *testing.T) {
	for ex, want := range map[string]string{
		"EXPLAIN claim\n  -> table=t type=ref possible_keys=idx_refresh_priority key=idx_refresh_priority key_len=3 rows=10 Extra=Using where\nEXPLAIN claim from cursor\n  -> table=t type=ALL key=x": "type=ref key=idx_refresh_priority",
		"EXPLAIN claim\n  -> table=t type=ALL possible_keys=idx key=NULL Extra=Using filesort\n":                                                                                                       "type=ALL key=NULL + filesort",
		"EXPLAIN claim\n  -> Limit\n  ->   ->  LockRows\n  ->         ->  Index Scan using t_refresh_priority_refresh_at_idx on t  (cost=0.43..8.45 rows=1 width=720)\n":                               "Index Scan on t_refresh_priority_refresh_at_idx",
		"EXPLAIN claim\n  -> Limit\n  ->   ->  Sort\n  ->     ->  Seq Scan on t  (cost=0.00..1.00 rows=1 width=720)\n":                                                                                 "Seq Scan + Sort",
	} {
		if got := explainSummary(ex); got != want {
			t.Errorf("%q: %q, want %q", ex, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"3G": 3 << 30, "512m": 512 << 20, "64K": 64 << 10, "1GB": 1 << 30, "134217728": 134217728} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "3X", "-1G", "1.5G"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
