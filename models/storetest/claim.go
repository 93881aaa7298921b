package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"
)

func testClaimDue(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyString)
	insert(t, env, "late", base.Add(-time.Hour))
	insert(t, env, "now", base)
	insert(t, env, "early", base.Add(-2*time.Hour))
	insert(t, env, "future", base.Add(time.Microsecond))
	insert(t, env, "never", time.Time{})
	insert(t, env, "", base.Add(-3*time.Hour)) // NULL key: never claimed

	rows := claim(t, env.Store, tbl, base, time.Time{}, 10)
	eq(t, keysOf(rows), []string{"early", "late", "now"}, "due rows, earliest first")
	eq(t, rows[0].State.RefreshAt, base.Add(-2*time.Hour), "refresh_at read back in UTC")
	eq(t, rows[0].Payload, payload.Fields{{Name: "input_url", Value: "https://example.com/early"}, {Name: "size", Value: int64(7)}}, "payload, in the table's order")
	eq(t, rows[0].Rule, "", "NULL refresh_rrule")
	eq(t, keysOf(claim(t, env.Store, tbl, base, time.Time{}, 2)), []string{"early", "late"}, "limit")

	var err error
	must(t, env.Store.Tx(context.Background(), func(tx models.Tx) error {
		_, err = tx.ClaimDue(context.Background(), tbl, base, models.Cursor{}, 0)
		return nil
	}))
	if err == nil {
		t.Fatal("ClaimDue with limit 0: no error")
	}
}

func testClaimDueCursor(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyInt)
	for i := range 5 {
		insert(t, env, fmt.Sprint(i+1), base.Add(time.Duration(i)*time.Minute))
	}
	now := base.Add(time.Hour)
	eq(t, keysOf(claim(t, env.Store, tbl, now, base.Add(2*time.Minute), 10)), []string{"3", "4", "5"}, "from is inclusive")
	eq(t, keysOf(claim(t, env.Store, tbl, now, time.Time{}, 10)), []string{"1", "2", "3", "4", "5"}, "zero from scans from the start")
	eq(t, keysOf(claim(t, env.Store, tbl, base.Add(3*time.Minute), base.Add(time.Minute), 10)), []string{"2", "3", "4"}, "from and now")
}

func testClaimDueSkipLocked(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	for i := range 40 {
		insert(t, env, fmt.Sprintf("m%02d", i), base.Add(-time.Duration(i)*time.Second))
	}
	var (
		claimed [2][]string
		both    sync.WaitGroup // both transactions hold their rows
		wg      sync.WaitGroup
		errs    = make(chan error, 2)
	)
	both.Add(2)
	for w := range 2 {
		wg.Go(func() {
			errs <- env.Store.Tx(ctx, func(tx models.Tx) error {
				rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 25)
				claimed[w] = keysOf(rows)
				both.Done()
				both.Wait() // keep the locks until the other has claimed too
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	seen := map[string]int{}
	for _, ks := range claimed {
		for _, k := range ks {
			seen[k]++
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("row %s claimed %d times: %v", k, n, claimed)
		}
	}
	eq(t, len(seen), 40, "rows claimed by both: ", claimed)
	// Which one gets more depends on how their scans interleave; neither
	// gets more than it asked for.
	eq(t, len(claimed[0]) <= 25 && len(claimed[1]) <= 25, true, "at most 25 each: ", claimed)
}

// testConcurrentClaimers runs claimers that each claim, move their rows'
// refresh_at an hour ahead and commit, until nothing is due: every row must
// be claimed exactly once.
func testConcurrentClaimers(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	const n = 200
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %s)", i, sqlTime(base.Add(-time.Duration(i)*time.Millisecond))))
	}
	env.Exec(t, "INSERT INTO items (k, refresh_at) VALUES "+strings.Join(vals, ", "))
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for {
				var got int
				err := env.Store.Tx(ctx, func(tx models.Tx) error {
					rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 7)
					if err != nil {
						return err
					}
					got = len(rows)
					mu.Lock()
					for _, r := range rows {
						seen[r.Key]++
					}
					mu.Unlock()
					for i := range rows {
						rows[i].State.RefreshAt = base.Add(time.Hour)
					}
					return tx.Save(ctx, tbl, rows)
				})
				if err != nil {
					errs <- err
					return
				}
				if got == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	eq(t, len(seen), n, "rows claimed")
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("row %s claimed %d times", k, c)
		}
	}
}
