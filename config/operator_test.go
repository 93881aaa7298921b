package config

import (
	"strings"
	"testing"
	"time"
)

func TestOperatorSettings(t *testing.T) {
	c := Config{Kinds: []Kind{{Name: "a"}, {Name: "b", LateAfter: Duration(5 * time.Minute)}}}
	env := map[string]string{"REFRESHER_API_TOKENS": `{alice: "t0k"}`, "REFRESHER_METRICS": ":9191"}
	if err := ApplyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	if c.APITokens["alice"] != (APIToken{Token: "t0k", Role: RoleAct}) {
		t.Errorf("api_tokens from the environment: %v", c.APITokens)
	}
	if got := c.HTTPAddr(); got != ":9191" {
		t.Errorf("metrics: is an alias of http:, got %q", got)
	}
	c.HTTP = "off"
	if got := c.HTTPAddr(); got != "" {
		t.Errorf("http: off, got %q", got)
	}
	c.HTTP, c.Metrics = "", ""
	if got := c.HTTPAddr(); got != "127.0.0.1:9090" {
		t.Errorf("default, got %q", got)
	}
	if c.Kinds[0].LateAfter.D() != time.Minute || c.Kinds[1].LateAfter.D() != 5*time.Minute || c.GaugeInterval.D() != 15*time.Second {
		t.Errorf("defaults: %v %v %v", c.Kinds[0].LateAfter, c.Kinds[1].LateAfter, c.GaugeInterval)
	}
	if c.SearchScanBudget != 5000 {
		t.Errorf("search_scan_budget default: %d", c.SearchScanBudget)
	}
}

// TestSearchScanBudget: search_scan_budget comes from the file or the
// environment, and a value out of range is refused with its key.
func TestSearchScanBudget(t *testing.T) {
	c := Config{Kinds: []Kind{{Name: "a", Schedule: "RRULE:FREQ=DAILY"}}}
	env := map[string]string{"REFRESHER_SEARCH_SCAN_BUDGET": "50000"}
	if err := ApplyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	if c.SearchScanBudget != 50000 {
		t.Errorf("from the environment: %d", c.SearchScanBudget)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int{-1, 1_000_001} {
		c.SearchScanBudget = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "search_scan_budget") {
			t.Errorf("%d: got %v, want an error naming search_scan_budget", bad, err)
		}
	}
}
