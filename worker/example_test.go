package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/worker"
)

// A worker for the kind big_tables on a local Redis, stopped by SIGTERM
// after the jobs in hand are done.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	w, err := worker.New(worker.Config{Kind: "big_tables", Redis: rdb, Concurrency: 8, HTTPTimeout: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Run(ctx); err != nil {
		fmt.Println(err)
	}
}

// Classify turns the outcome of one GET into the result a worker pushes.
func ExampleClassify() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	throttled := worker.Outcome{
		URL:        "https://example.com/a.csv",
		StatusCode: http.StatusTooManyRequests,
		Status:     "429 Too Many Requests",
		RetryAfter: now.Add(2 * time.Minute).Format(http.TimeFormat),
	}
	r := worker.Classify(throttled, now)
	fmt.Println(r.Type, r.RetryAfterSeconds, r.Reason)

	gone := worker.Outcome{URL: "https://example.com/old.csv", StatusCode: http.StatusGone, Status: "410 Gone"}
	r = worker.Classify(gone, now)
	fmt.Println(r.Type, r.Permanent, r.UserFriendlyReason)
	// Output:
	// failure 120 GET https://example.com/a.csv: HTTP 429 Too Many Requests (retry after 120s)
	// failure true Provided URL is invalid: https://example.com/old.csv
}
