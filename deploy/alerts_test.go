package deploy

import (
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestAlertRules parses alerts.yml with Prometheus's own rule parser (which
// also parses each PromQL expression and template) and checks that the
// seed-004 alerts exist, with the thresholds the config sets per priority.
func TestAlertRules(t *testing.T) {
	groups, errs := rulefmt.ParseFile("prometheus/alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	var names, exprs []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			exprs = append(exprs, r.Expr)
			// A kind an operator paused has due rows and no progress on
			// purpose: that alert must leave it out.
			if r.Alert == "RefresherNoProgressWhileDue" && !strings.Contains(r.Expr, "unless on (kind) max by (kind) (refresher_kind_paused) == 1") {
				t.Errorf("RefresherNoProgressWhileDue does not leave out paused kinds: %s", r.Expr)
			}
		}
	}
	for _, want := range []string{"RefresherMaxAgeInteractive", "RefresherMaxAttemptsInteractive", "RefresherMaxAge",
		"RefresherMaxAttempts", "RefresherDeadLettersGrowing", "RefresherNoProgressWhileDue"} {
		if !slices.Contains(names, want) {
			t.Errorf("alerts.yml has no alert %s (has %v)", want, names)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, metric := range []string{"refresher_oldest_due_age_by_level_seconds", "refresher_max_attempt_no_by_level", "refresher_list_length", "refresher_models",
		"refresher_priority_alert_max_age_seconds", "refresher_priority_alert_max_attempts"} {
		if !strings.Contains(all, metric) {
			t.Errorf("no alert uses %s", metric)
		}
	}
}

// TestAlertsByPriorityLevel evaluates the four alerts by priority with
// Prometheus's engine on series like the service's: each level's gauge is
// compared with its own level's threshold, a level without a name in
// priorities: has no alert, and a level an interactive name shares with
// another name alerts once, as interactive.
func TestAlertsByPriorityLevel(t *testing.T) {
	groups, errs := rulefmt.ParseFile("prometheus/alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	expr := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr[r.Alert] = strings.Join(strings.Fields(r.Expr), " ")
		}
	}
	// The thresholds of the default priorities plus "urgent", a second
	// name of level 0; the gauges of kind k: level 0 due for 70 s (past
	// interactive's 30 s and urgent's 60 s) at attempt 1, level 10 due for 100 s (within
	// normal's 15 min) at attempt 5 (normal's threshold), level 20 at
	// attempt 3 and due for 3 h (past eventual's 2.5 h), level 3 (no name)
	// due for a day at attempt 50.
	series := map[string]float64{
		`refresher_priority_alert_max_age_seconds{priority="interactive",level="0"}`: 30,
		`refresher_priority_alert_max_age_seconds{priority="urgent",level="0"}`:      60,
		`refresher_priority_alert_max_age_seconds{priority="normal",level="10"}`:     900,
		`refresher_priority_alert_max_age_seconds{priority="eventual",level="20"}`:   9000,
		`refresher_priority_alert_max_attempts{priority="interactive",level="0"}`:    2,
		`refresher_priority_alert_max_attempts{priority="urgent",level="0"}`:         4,
		`refresher_priority_alert_max_attempts{priority="normal",level="10"}`:        5,
		`refresher_priority_alert_max_attempts{priority="eventual",level="20"}`:      8,
		`refresher_oldest_due_age_by_level_seconds{kind="k",level="0"}`:              70,
		`refresher_oldest_due_age_by_level_seconds{kind="k",level="10"}`:             100,
		`refresher_oldest_due_age_by_level_seconds{kind="k",level="20"}`:             10800,
		`refresher_oldest_due_age_by_level_seconds{kind="k",level="3"}`:              86400,
		`refresher_max_attempt_no_by_level{kind="k",level="0"}`:                      1,
		`refresher_max_attempt_no_by_level{kind="k",level="10"}`:                     5,
		`refresher_max_attempt_no_by_level{kind="k",level="20"}`:                     3,
		`refresher_max_attempt_no_by_level{kind="k",level="3"}`:                      50,
	}
	at := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct{ alert, want string }{
		{"RefresherMaxAgeInteractive", `{kind="k", level="0", priority="interactive"} => 70`},
		{"RefresherMaxAttemptsInteractive", ``},
		{"RefresherMaxAge", `{kind="k", level="20"} => 10800`},
		{"RefresherMaxAttempts", `{kind="k", level="10"} => 5`},
	} {
		var got []string
		for _, s := range evalAt(t, expr[c.alert], at, series) {
			got = append(got, s.Metric.String()+" => "+strconv.FormatFloat(s.F, 'g', -1, 64))
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("%s fires for %q, want %q", c.alert, got, c.want)
		}
	}
}

// TestGrafanaDashboard checks that the dashboard is JSON and draws the
// alert gauges.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana/refresher.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana/refresher.json is not valid JSON: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, metric := range []string{"refresher_oldest_due_age_seconds", "refresher_max_attempt_no", "refresher_models", "refresher_list_length", "refresher_kind_paused", "refresher_backlog",
		"refresher_oldest_due_age_by_level_seconds", "refresher_max_attempt_no_by_level"} {
		if !strings.Contains(all, metric) {
			t.Errorf("no panel draws %s", metric)
		}
	}
}
