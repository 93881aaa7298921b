package redisio

import (
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
)

func TestZZLatency(t *testing.T) {
	single := testenv.RedisServer(t)
	cl := testenv.RedisCluster(t)
	for _, u := range []string{single, cl.URL, single, cl.URL} {
		rdb, err := Open(t.Context(), u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		l := DefaultListsOn(TopologyOf(u), "k")
		c := New(rdb)
		ctx := t.Context()
		start := time.Now()
		for i := 0; i < 5000; i++ {
			c.PushRaw(ctx, l.Input, "x")
			c.ReadDispatchState(ctx, l, true, time.Now())
		}
		t.Logf("%s: %v per pair", TopologyOf(u), time.Since(start)/5000)
		rdb.Close()
	}
}
