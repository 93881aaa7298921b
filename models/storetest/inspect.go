package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

func testCounts(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	c, err := in.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	eq(t, c, models.Counts{}, "empty table")
	for i := 1; i <= 6; i++ {
		insert(t, env, fmt.Sprint(i), time.Time{})
	}
	must(t, save(env.Store, tbl,
		models.Row{Key: "1", State: policy.State{RefreshAt: base.Add(-2 * time.Hour)}},                                                 // due, late
		models.Row{Key: "2", State: policy.State{RefreshAt: base.Add(-time.Minute), AttemptUID: "d1v5bqh6n88c73890002", AttemptNo: 4}}, // due, running
		models.Row{Key: "3", State: policy.State{RefreshAt: base.Add(time.Hour), FailingSince: base, AttemptNo: 2}},                    // failing
		models.Row{Key: "4", State: policy.State{DisabledAt: base, FailingSince: base}},                                                // disabled, not failing
		models.Row{Key: "5", State: policy.State{RefreshAt: base}},                                                                     // due (now)
	))
	c, err = in.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	eq(t, c, models.Counts{Total: 6, Due: 3, Late: 1, Running: 1, Failing: 1, Disabled: 1, OldestDue: base.Add(-2 * time.Hour), MaxAttemptNo: 4})
}

func testList(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	// Keys 1..12: ordered as integers, 2 before 10.
	var rows []models.Row
	for i := 1; i <= 12; i++ {
		insert(t, env, fmt.Sprint(i), time.Time{})
		st := policy.State{RefreshAt: base.Add(time.Duration(i) * time.Hour)}
		if i%2 == 0 {
			st.RefreshAt = base.Add(-time.Duration(i) * time.Minute)
		}
		if i == 10 {
			st.DisabledAt, st.DisabledReason = base, "Invalid URL given"
		}
		rows = append(rows, models.Row{Key: fmt.Sprint(i), State: st})
	}
	must(t, save(env.Store, tbl, rows...))
	list := func(q models.ListQuery) []string {
		t.Helper()
		q.Now = base
		got, err := in.List(ctx, tbl, q)
		must(t, err)
		for _, r := range got.Rows {
			if len(r.Payload) != 0 {
				t.Fatalf("List returned a payload: %v", r.Payload)
			}
		}
		return keysOf(got.Rows)
	}
	eq(t, list(models.ListQuery{State: models.StateDue, Limit: 4}), []string{"2", "4", "6", "8"}, "first page, by key as an integer")
	eq(t, list(models.ListQuery{State: models.StateDue, Limit: 4, After: "8"}), []string{"10", "12"}, "second page")
	eq(t, list(models.ListQuery{State: models.StateDue, Limit: 4, After: "12"}), []string{}, "past the end")
	eq(t, list(models.ListQuery{State: models.StateAll, After: "9", Limit: 2}), []string{"10", "11"}, "all")
	eq(t, len(list(models.ListQuery{State: models.StateAll})), 12, "default limit")
	eq(t, list(models.ListQuery{State: models.StateDisabled}), []string{"10"}, "disabled")
	eq(t, list(models.ListQuery{State: models.StateAll, Search: "invalid url"}), []string{"10"}, "search in the reason, case-insensitive")
	eq(t, list(models.ListQuery{State: models.StateLate, LateAfter: 9 * time.Minute}), []string{"10", "12"}, "late")
	// A search within a state is read from the state's rows first: the page
	// is still ordered by key as the key's type orders it, and pages on.
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "2"}), []string{"2", "12"}, "search within a state, by key as an integer")
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "2", Limit: 1}), []string{"2"}, "search within a state, first page")
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "2", Limit: 1, After: "2"}), []string{"12"}, "search within a state, second page")
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "INVALID"}), []string{"10"}, "search in the reason within a state")
	eq(t, list(models.ListQuery{State: models.StateRunning, Search: "2"}), []string{}, "search within an empty state")
}

// testSearchBudget follows a search's continuation to the end with a small
// scan budget: every match is found once, in key order, pages with no match
// still go on, and the last page is complete, also when the budget ends on
// the table's last row.
func testSearchBudget(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	// Keys 1..30, ordered as integers; the even ones are due; "boom" is in
	// the last error of 3, 4, 5, 17, 18 and 29.
	var rows []models.Row
	for i := 1; i <= 30; i++ {
		insert(t, env, fmt.Sprint(i), time.Time{})
		st := policy.State{RefreshAt: base.Add(time.Duration(i) * time.Hour)}
		if i%2 == 0 {
			st.RefreshAt = base.Add(-time.Duration(i) * time.Minute)
		}
		switch i {
		case 3, 4, 5, 17, 18, 29:
			st.FailingSince, st.LastError = base, fmt.Sprintf("GET https://x/%d: BOOM", i)
		}
		rows = append(rows, models.Row{Key: fmt.Sprint(i), State: st})
	}
	must(t, save(env.Store, tbl, rows...))
	type page struct {
		Keys            []string
		Next, ScannedTo string
	}
	follow := func(q models.ListQuery) []page {
		t.Helper()
		q.Now, q.Search = base, "boom"
		var pages []page
		for len(pages) < 50 {
			got, err := in.List(ctx, tbl, q)
			must(t, err)
			pages = append(pages, page{keysOf(got.Rows), got.Next, got.ScannedTo})
			if got.Complete() {
				return pages
			}
			q.After = got.Next
		}
		t.Fatalf("the search did not end: %v", pages)
		return nil
	}
	eq(t, follow(models.ListQuery{State: models.StateAll, Limit: 2, ScanBudget: 5}), []page{
		{[]string{"3", "4"}, "4", ""}, // a full page goes on after its last match
		{[]string{"5"}, "9", "9"},     // the budget ran out at 9
		{[]string{}, "14", "14"},      // no match in 10..14, and more to search
		{[]string{"17", "18"}, "18", ""},
		{[]string{}, "23", "23"},
		{[]string{}, "28", "28"},
		{[]string{"29"}, "", ""}, // 29 and 30: the end
	}, "all, 2 a page, 5 rows a request")
	// Within a state the budget counts the table's rows in key order, the
	// state's and the others: 3, 5, 17 and 29 match the search but are not
	// due.
	eq(t, follow(models.ListQuery{State: models.StateDue, Limit: 5, ScanBudget: 6}), []page{
		{[]string{"4"}, "6", "6"}, // rows 1..6
		{[]string{}, "12", "12"},
		{[]string{"18"}, "18", "18"},
		{[]string{}, "24", "24"},
		{[]string{}, "", ""}, // 25..30: the budget ends on the table's last row
	}, "due, 5 a page, 6 rows a request")
	eq(t, follow(models.ListQuery{State: models.StateAll, Limit: 10}), []page{
		{[]string{"3", "4", "5", "17", "18", "29"}, "", ""},
	}, "default budget")
}
