package refresher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// TestKindsOnTwoStores: two instances of a service with kind a on MariaDB
// and kind b on PostgreSQL, each with its own Kind.Store (the store given
// to New is nil). Both idle, their dispatchers park, and the due watch
// asks each database about its own kind only (a table asked of the other
// database would fail the look, logged as a warning); the rows each
// application then sets due are found and dispatched from their own
// database, each exactly once although both instances claim.
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
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	runErrs := make([]error, 2)
	for i := range runErrs { // two instances share both kinds
		svc, err := New(Config{Kinds: []Kind{kind("a", myCount), kind("b", pgCount)}, InstanceID: fmt.Sprintf("two-stores-%d", i),
			MaxSleep: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil, redisio.New(rdb))
		require.NoError(t, err)
		wg.Go(func() { runErrs[i] = svc.Run(runCtx) })
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	// Parked: each database is asked by the due watch.
	testenv.Eventually(t, 10*time.Second, "the due watch looks at both databases", func() bool {
		return myCount.many.Load() >= 3 && pgCount.many.Load() >= 3
	})
	// Rows each application sets due: each dispatched once, by either
	// instance (SKIP LOCKED on each database).
	const rows = 200
	due := time.Now().UTC().Add(-time.Second)
	for i := range rows {
		my.Exec(t, "INSERT INTO a (uid, refresh_at) VALUES (?, ?)", fmt.Sprintf("a%d", i), due)
		pg.Exec(t, "INSERT INTO b (uid, refresh_at) VALUES (?, ?)", fmt.Sprintf("b%d", i), due)
	}
	for _, k := range []string{"a", "b"} {
		input := redisio.DefaultLists(prefix + k).Input
		seen := map[string]bool{}
		for len(seen) < rows {
			res, err := rdb.BLPop(ctx, 10*time.Second, input).Result()
			require.NoError(t, err, "kind %s: %d jobs of %d; log:\n%s", k, len(seen), rows, logs.String())
			var job redisio.Job
			require.NoError(t, json.Unmarshal([]byte(res[1]), &job))
			require.False(t, seen[job.UID], "kind %s: %s dispatched twice", k, job.UID)
			require.Regexp(t, "^"+k+"[0-9]+$", job.UID)
			seen[job.UID] = true
		}
		time.Sleep(200 * time.Millisecond) // 10 passes
		extra, err := rdb.LLen(ctx, input).Result()
		require.NoError(t, err)
		require.Zero(t, extra, "kind %s: more jobs than rows", k)
	}
	require.NotContains(t, logs.String(), "cannot look for due rows")

	// A kind without a store, and no store given to New, is refused.
	_, err = New(Config{Kinds: []Kind{kind("c", nil)}, InstanceID: "x"}, nil, redisio.New(rdb))
	require.ErrorContains(t, err, `kind "c" has no Store`)

	stop()
	wg.Wait()
	require.NoError(t, errors.Join(runErrs...))
}
