package config

import (
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
	if c.APITokens["alice"] != "t0k" {
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
	if got := c.HTTPAddr(); got != DefaultHTTP {
		t.Errorf("default, got %q", got)
	}
	if c.Kinds[0].LateAfter.D() != time.Minute || c.Kinds[1].LateAfter.D() != 5*time.Minute || c.GaugeInterval.D() != 15*time.Second {
		t.Errorf("defaults: %v %v %v", c.Kinds[0].LateAfter, c.Kinds[1].LateAfter, c.GaugeInterval)
	}
}
