package refresher

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// TestKindsOnTwoStores: one service, kind a on MariaDB and kind b on
// PostgreSQL, each with its own Kind.Store (the store given to New is
// nil). Both idle, their dispatchers park, and the due watch asks each
// database about its own kind only (a table asked of the other database
// would fail the look, logged as a warning); a row each application then
// sets due is found and dispatched, each from its own database.
func TestKindsOnTwoStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	my, pg := teststore.Open(t, teststore.MySQL), teststore.Open(t, teststore.Postgres)
	my.Exec(t, "CREATE TABLE a (id BIGINT AUTO_INCREMENT PRIMARY KEY, uid CHAR(20) NOT NULL UNIQUE)")
	pg.Exec(t, "CREATE TABLE b (id bigserial PRIMARY KEY, uid varchar(20) NOT NULL UNIQUE)")
	_, err := my.Store.Migrate(ctx, []string{"a"}, io.Discard, false)
	require.NoError(t, err)
	_, err = pg.Store.Migrate(ctx, []string{"b"}, io.Discard, false)
	require.NoError(t, err)
	myCount, pgCount := &nextDueCount{Store: my.Store}, &nextDueCount{Store: pg.Store}

	rdb, prefix := testenv.Redis(t)
	sched, err := schedule.Parse("RRULE:FREQ=DAILY")
	require.NoError(t, err)
	kind := func(name string, store models.Store) Kind {
		return Kind{Name: name, Table: models.Table{Name: name, Key: "uid"}, Store: store,
			Lists: redisio.DefaultLists(prefix + name), Schedule: sched, Policy: policy.Policy{Timeout: time.Hour}}
	}
	var logs testenv.SyncBuffer
	svc, err := New(Config{Kinds: []Kind{kind("a", myCount), kind("b", pgCount)}, InstanceID: "two-stores",
		MaxSleep: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil, redisio.New(rdb))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = svc.Run(runCtx) })
	t.Cleanup(func() { stop(); wg.Wait() })

	// Parked: each database is asked by the due watch.
	eventually(t, 10*time.Second, "the due watch looks at both databases", func() bool {
		return myCount.many.Load() >= 3 && pgCount.many.Load() >= 3
	})
	due := time.Now().UTC().Add(-time.Second)
	my.Exec(t, "INSERT INTO a (uid, refresh_at) VALUES ('a1', ?)", due)
	pg.Exec(t, "INSERT INTO b (uid, refresh_at) VALUES ('b1', ?)", due)
	for _, k := range []string{"a", "b"} {
		res, err := rdb.BLPop(ctx, 10*time.Second, redisio.DefaultLists(prefix+k).Input).Result()
		require.NoError(t, err, "kind %s: no job; log:\n%s", k, logs.String())
		require.Contains(t, res[1], `"uid":"`+k+`1"`)
	}
	require.NotContains(t, logs.String(), "cannot look for due rows")

	// A kind without a store, and no store given to New, is refused.
	_, err = New(Config{Kinds: []Kind{kind("c", nil)}, InstanceID: "x"}, nil, redisio.New(rdb))
	require.ErrorContains(t, err, `kind "c" has no Store`)

	stop()
	wg.Wait()
	require.NoError(t, runErr)
}
