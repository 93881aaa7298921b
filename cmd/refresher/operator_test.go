package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/operator"
)

// TestOperatorRefusesOpenListenerWithoutToken checks that `run` will not
// serve the API beyond loopback without a token, and says how to set one.
func TestOperatorRefusesOpenListenerWithoutToken(t *testing.T) {
	for _, addr := range []string{":9090", "0.0.0.0:9090", "10.1.2.3:80"} {
		c := &config.Config{HTTP: addr}
		_, err := operatorServer(c, nil, nil, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "REFRESHER_API_TOKENS") || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("http: %s without a token: err %v, want a refusal saying how to set a token", addr, err)
		}
	}
}

// TestAnnounceReadOnly: the log says read_only=true when no token may act,
// e.g. when the only token has role read, and says whether reads need a
// token (off loopback, without http_public_read).
func TestAnnounceReadOnly(t *testing.T) {
	store, err := stores.Open(t.Context(), "sqlite::memory:", stores.Options{})
	require.NoError(t, err)
	defer store.Close()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	for _, tc := range []struct {
		tokens map[string]config.APIToken
		addr   string
		public bool
		want   string
	}{
		{map[string]config.APIToken{"grafana": {Token: "0123456789abcdef", Role: config.RoleRead}}, "10.1.2.3:9090", false, "read_only=true reads_need_token=true"},
		{map[string]config.APIToken{"ops": {Token: "0123456789abcdef"}}, "10.1.2.3:9090", true, "read_only=false reads_need_token=false"},
		{nil, "127.0.0.1:9090", false, "read_only=true reads_need_token=false"},
	} {
		c := &config.Config{HTTP: tc.addr, APITokens: tc.tokens, HTTPPublicRead: tc.public}
		c.SetDefaults()
		op, err := operator.New(c.OperatorAccess(operator.Options{Store: store, Redis: rdb}))
		require.NoError(t, err)
		var out strings.Builder
		announce(slog.New(slog.NewTextHandler(&out, nil)), tc.addr, op)
		require.Contains(t, out.String(), tc.want, "%v", tc.tokens)
	}
}
