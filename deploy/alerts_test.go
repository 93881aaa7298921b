package deploy

import (
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

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
	for _, metric := range []string{"refresher_oldest_due_age_seconds", "refresher_max_attempt_no", "refresher_list_length", "refresher_models",
		"refresher_priority_alert_max_age_seconds", "refresher_priority_alert_max_attempts"} {
		if !strings.Contains(all, metric) {
			t.Errorf("no alert uses %s", metric)
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
	for _, metric := range []string{"refresher_oldest_due_age_seconds", "refresher_max_attempt_no", "refresher_models", "refresher_list_length", "refresher_kind_paused", "refresher_backlog"} {
		if !strings.Contains(all, metric) {
			t.Errorf("no panel draws %s", metric)
		}
	}
}
