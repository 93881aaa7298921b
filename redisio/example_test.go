package redisio_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/redisio"
)

// A poller's loop: recover what dead instances left, then fetch, apply in
// one database transaction, and acknowledge with the dead letters.
func ExampleDrain() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	lists := redisio.DefaultLists("big_tables")
	drain := redisio.New(rdb).Drain(lists, "host-1", 30*time.Second)

	if _, err := drain.Recover(ctx); err != nil { // at start, then about once per TTL
		log.Print(err)
	}
	for ctx.Err() == nil {
		msgs, err := drain.Fetch(ctx, 1000, time.Second)
		if err != nil {
			log.Print(err) // Redis down: back off, then try again
			continue
		}
		var dead []redisio.Message
		for _, m := range msgs {
			if m.Err != nil { // not a valid result
				dead = append(dead, m)
				continue
			}
			// ... look the model up by m.Result.UID, set m.Err and add it to
			// dead if there is none, apply m.Result unless its AttemptUID
			// is stale ...
		}
		// ... commit the transaction; only then:
		if err := drain.Ack(ctx, msgs, dead); errors.Is(err, redisio.ErrRecovered) {
			log.Print("warning: ", err) // applied twice, harmless
		} else if err != nil {
			log.Print(err) // the batch is fetched again
		}
	}
}
