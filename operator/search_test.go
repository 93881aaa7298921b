package operator

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSearchGoesOn follows a search with a scan budget of 3 rows through
// the API: pages with no match still say where to go on, every match comes
// once in key order, and the last page is complete. The dashboard offers
// the same continuation as a link.
func TestSearchGoesOn(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.o.SearchBudget = 3 // set before any request
	// Keys in order: a-very-long-…, due-1, failing-1, late-1, late-2, off-1,
	// off-2, off-3, ok-1, running-1; "refused" is in off-1's and off-2's
	// last error.
	type pg struct {
		UIDs            string
		Next, ScannedTo string
		Complete        bool
	}
	var got []pg
	after := ""
	for range 10 {
		var page ModelPage
		if st := f.do("GET", "/api/v1/kinds/items/models?state=all&q=REFUSED&after="+after, "", nil, &page); st != 200 {
			t.Fatalf("status %d", st)
		}
		var uids []string
		for _, it := range page.Items {
			uids = append(uids, it.UID)
		}
		got = append(got, pg{strings.Join(uids, ","), page.Next, page.ScannedTo, page.Complete})
		if page.Complete {
			break
		}
		after = page.Next
	}
	want := []pg{
		{"", "failing-1", "failing-1", false},
		{"off-1", "off-1", "off-1", false},
		{"off-2", "ok-1", "ok-1", false},
		{"", "", "", true},
	}
	if len(got) != len(want) {
		t.Fatalf("pages:\n got %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("page %d:\n got %+v\nwant %+v", i+1, got[i], want[i])
		}
	}

	resp, err := http.Get(f.http.URL + "/kinds/items?state=all&q=refused")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{"Searched up to uid failing-1: no match yet. More results may exist further:",
		`<a rel="next" href="/kinds/items?state=all&amp;q=refused&amp;after=failing-1">search on →</a>`} {
		if !strings.Contains(string(body), s) {
			t.Fatalf("dashboard page lacks %q:\n%s", s, body)
		}
	}
	if strings.Contains(string(body), "No models") {
		t.Fatalf("dashboard says no models while the search goes on:\n%s", body)
	}
}
