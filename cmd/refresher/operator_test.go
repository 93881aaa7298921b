package main

import (
	"context"
	"strings"
	"testing"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
)

// TestOperatorRefusesOpenListenerWithoutToken checks that `run` will not
// serve the API beyond loopback without a token, and says how to set one.
func TestOperatorRefusesOpenListenerWithoutToken(t *testing.T) {
	for _, addr := range []string{":9090", "0.0.0.0:9090", "10.1.2.3:80"} {
		c := &config.Config{HTTP: addr}
		_, err := operatorServer(context.Background(), nil, c, nil, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "REFRESHER_API_TOKENS") || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("http: %s without a token: err %v, want a refusal saying how to set a token", addr, err)
		}
	}
}

// TestSearchScanBudgetDefault: the config's default search budget is the
// store's, so leaving search_scan_budget out changes nothing.
func TestSearchScanBudgetDefault(t *testing.T) {
	if config.DefaultSearchScanBudget != models.DefaultScanBudget {
		t.Errorf("config.DefaultSearchScanBudget %d, models.DefaultScanBudget %d", config.DefaultSearchScanBudget, models.DefaultScanBudget)
	}
}
