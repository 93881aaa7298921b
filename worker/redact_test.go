package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// A password or token in input_url (user information, or a secret query
// parameter) appears in no result and no log line, whatever the outcome.
func TestWorkerRedactsSecretsInURLs(t *testing.T) {
	t.Parallel()
	const secret = "S3cretUrlPw1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/404":
			http.NotFound(w, r)
		case "/redirect":
			http.Redirect(w, r, "http://user:"+secret+"@10.0.0.1/x?token="+secret, http.StatusFound)
		default:
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	var logs testenv.SyncBuffer
	b := setupRun(t, func(c *Config) {
		c.AllowPrivateNetworks = false // 10.0.0.1 is refused, the loopback test server allowed
		c.AllowNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	withUser := strings.Replace(srv.URL, "://", "://user:"+secret+"@", 1)
	urls := []string{
		withUser + "/404",
		srv.URL + "/500?x=1&Token=" + secret,
		srv.URL + "/500?api_key=" + secret + "#access_token=" + secret,
		withUser + "/redirect",
		"http://user:" + secret + "@10.0.0.1/data.csv",
		"htp://user:" + secret + "@host/a.csv",
		"http://user:" + secret + "@[::1:80/a.csv",
	}
	for i, u := range urls {
		b.pushJob(t, string(rune('a'+i)), u, time.Now().Add(time.Minute))
	}
	require.NoError(t, b.rdb.RPush(context.Background(), b.cfg.Input, `{"payload":{"input_url":"http://u:`+secret+`@h/"}`).Err())
	for range urls {
		res := b.nextResult(t)
		data, err := json.Marshal(res)
		require.NoError(t, err)
		require.NotContains(t, string(data), secret)
		require.Equal(t, redisio.ResultFailure, res.Type, "%s", data)
		require.Contains(t, res.Reason, "xxxxx", "%s", data)
	}
	// The message that is no job, pushed last, may still be on its way
	// when the last result is: stopping now could leave it unread.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "skip message that is not a job") },
		10*time.Second, 10*time.Millisecond, "the message that is no job is skipped and logged")
	b.stop(t)
	require.Contains(t, logs.String(), "refuse to connect")
	require.NotContains(t, logs.String(), secret)
}
