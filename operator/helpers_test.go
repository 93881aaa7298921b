package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// now is the fixture's fixed clock.
var now = time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)

const testToken = "s3cret-token-for-tests"

type fixture struct {
	t     *testing.T
	store *mysqlstore.Store
	dsn   string // of the fixture's database
	rdb   *redis.Client
	kind  Kind
	srv   *Server
	http  *httptest.Server
}

// newFixture creates table "items" on a fresh database with models in
// every state, a kind on it with lists under the test's Redis prefix, and
// serves the operator surface with tokens (nil: read-only).
func newFixture(t *testing.T, tokens map[string]string) *fixture {
	t.Helper()
	ctx := context.Background()
	dsn := testenv.MySQLDSN(t)
	db, err := mysqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE items (id BIGINT AUTO_INCREMENT PRIMARY KEY, uid VARCHAR(200) NOT NULL, host VARCHAR(100) NULL, UNIQUE KEY (uid))"); err != nil {
		t.Fatal(err)
	}
	if _, err := mysqlstore.Migrate(ctx, db, []string{"items"}, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	store := mysqlstore.New(db)
	rdb, prefix := testenv.Redis(t)
	sched, err := schedule.Parse("DTSTART:20260101T020000Z\nRRULE:FREQ=DAILY")
	if err != nil {
		t.Fatal(err)
	}
	retry, _ := policy.ParseRetry("delays:1m,5m,15m")
	k := Kind{Name: "items", Table: models.Table{Name: "items", Key: "uid", Payload: []string{"host"}}, ThrottleGroup: "host",
		Lists:    redisio.DefaultLists(prefix + "items"),
		Schedule: sched, Policy: policy.Policy{Kind: "items", Timeout: time.Hour, Retry: retry},
		LateAfter: time.Minute, Priority: "interactive", PriorityLevels: map[string]int{"interactive": 0, "eventual": 20}}
	f := &fixture{t: t, store: store, dsn: dsn, rdb: rdb, kind: k}
	f.seed()
	srv, err := New(Options{Kinds: []Kind{k}, Store: &noLedger{store}, Redis: rdb, Tokens: tokens,
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
		AuthFailureBurst: 3, AuthFailureEvery: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.http = httptest.NewServer(srv.Handler())
	t.Cleanup(f.http.Close)
	return f
}

// seed writes the models: 2 late, 1 due, 1 scheduled, 1 running, 1
// failing, 3 disabled (2 by the retry policy during an incident at 09:00,
// 1 by the worker earlier), plus a model with a very long uid and reason.
func (f *fixture) seed() {
	t := f.t
	ctx := context.Background()
	long := "a-very-long-model-uid-" + string(bytes.Repeat([]byte("x"), 150))
	rows := []models.Row{
		{Key: "late-1", State: policy.State{RefreshAt: now.Add(-10 * time.Minute), LastSuccessAt: now.Add(-24 * time.Hour)}},
		{Key: "late-2", State: policy.State{RefreshAt: now.Add(-3 * time.Minute)}},
		{Key: "due-1", State: policy.State{RefreshAt: now.Add(-10 * time.Second)}},
		{Key: "ok-1", State: policy.State{RefreshAt: now.Add(12 * time.Hour), LastSuccessAt: now.Add(-12 * time.Hour)}},
		{Key: "running-1", State: policy.State{RefreshAt: now.Add(50 * time.Minute), AttemptUID: "d1v5bqh6n88c73890001",
			AttemptAt: now.Add(-10 * time.Minute), AttemptNo: 1, TimeoutAt: now.Add(50 * time.Minute), Status: "importing 5/10"}},
		{Key: "failing-1", State: policy.State{RefreshAt: now.Add(5 * time.Minute), AttemptAt: now.Add(-time.Minute),
			AttemptNo: 2, FailingSince: now.Add(-5 * time.Hour), LastError: "HTTP 503 from upstream"}},
		{Key: "off-1", State: policy.State{DisabledAt: now.Add(-5 * time.Hour), AttemptNo: 3, FailingSince: now.Add(-6 * time.Hour),
			DisabledReason: "Cannot refresh items after 3 attempt(s)", LastError: "connection refused"}},
		{Key: "off-2", State: policy.State{DisabledAt: now.Add(-4 * time.Hour), AttemptNo: 3, FailingSince: now.Add(-5 * time.Hour),
			DisabledReason: "Cannot refresh items after 3 attempt(s)", LastError: "connection refused"}},
		{Key: "off-3", State: policy.State{DisabledAt: now.Add(-30 * 24 * time.Hour), AttemptNo: 1,
			DisabledReason: "Provided URL is invalid", LastError: "permanent: 404"}},
		{Key: long, State: policy.State{DisabledAt: now.Add(-time.Hour), AttemptNo: 1,
			DisabledReason: "Provided URL is invalid: https://example.com/" + string(bytes.Repeat([]byte("very-long-path/"), 20))}},
	}
	// The throttle group (host) of some rows; the others have none.
	hosts := map[string]any{"failing-1": "api.example.com", "ok-1": "api.example.com", "due-1": "other.example.com"}
	for _, r := range rows {
		if _, err := f.store.DB().Exec("INSERT INTO items (uid, host) VALUES (?, ?)", r.Key, hosts[r.Key]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, f.kind.Table, rows) }); err != nil {
		t.Fatal(err)
	}
	dead := []string{
		`{"error":"no model \"gone-1\" in items","list":"items-output","message":"{\"uid\":\"gone-1\",\"type\":\"success\"}","at":"2026-03-04T13:00:00Z"}`,
		`{"error":"invalid result: not JSON","list":"items-output","message":"garbage","at":"2026-03-04T13:05:00Z"}`,
		`not json at all`,
	}
	for _, d := range dead {
		f.rdb.RPush(ctx, f.kind.Lists.Dead, d)
	}
	f.rdb.RPush(ctx, f.kind.Lists.Input, "job-1", "job-2")
}

// do sends a request with an optional bearer token and JSON body and
// decodes the JSON answer into out (when not nil); it returns the status.
func (f *fixture) do(method, path, token string, body, out any) int {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.http.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("%s %s: %d, not JSON: %v: %s", method, path, resp.StatusCode, err, data)
		}
	}
	return resp.StatusCode
}

// noLedger is a store that keeps no ledger: the fixture's, so that the
// pages and the API show what they do without one (withLedger serves a
// kind with one). It hides the store's models.LedgerReader.
type noLedger struct{ models.Store }
