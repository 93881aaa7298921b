package operator

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// awkwardKeys are model keys that a URL path carries only when escaped:
// dot segments (which browsers resolve, even as %2E%2E), the path and query
// delimiters, "%", spaces, the escape mark itself, and an empty key.
var awkwardKeys = []string{"..", ".", "a/b", "../items", "50%", "what?", "#1", "with space", "!bang", "!..", ""}

// addModels inserts scheduled models with the given keys.
func (f *fixture) addModels(keys ...string) {
	f.t.Helper()
	ctx := context.Background()
	var rows []models.Row
	for _, k := range keys {
		if _, err := f.store.DB().Exec("INSERT INTO items (uid) VALUES (?)", k); err != nil {
			f.t.Fatal(err)
		}
		rows = append(rows, models.Row{Key: k, State: policy.State{RefreshAt: now.Add(time.Hour)}})
	}
	if err := f.store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, f.kind.Table, rows) }); err != nil {
		f.t.Fatal(err)
	}
}

// get fetches path and returns the status, the content type and the body.
func (f *fixture) get(method, path string) (int, string, string) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.http.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestKeySegmentRoundTrip(t *testing.T) {
	for _, k := range append(awkwardKeys, "plain-1", "!", "!!", "~x", "é/ü") {
		seg := keySegment(k)
		if seg == "." || seg == ".." || seg == "" || strings.Contains(seg, "/") {
			t.Errorf("key %q: segment %q is not one plain path segment", k, seg)
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || keyOf(dec) != k {
			t.Errorf("key %q: segment %q decodes to %q (%v)", k, seg, keyOf(dec), err)
		}
	}
	if keySegment("plain-1") != "plain-1" || keySegment("a/b") != "a%2Fb" {
		t.Errorf("ordinary keys are percent-escaped only: %q %q", keySegment("plain-1"), keySegment("a/b"))
	}
}

// TestAwkwardKeysOpenAndAct follows the kind page's links to models whose
// keys need escaping, resolving them as a browser does (dot segments
// removed), and triggers each from the link its page gives.
func TestAwkwardKeysOpenAndAct(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	f.addModels(awkwardKeys...)
	_, _, body := f.get("GET", "/kinds/items?limit=100")
	base, _ := url.Parse(f.http.URL + "/kinds/items")
	hrefs := map[string]string{}          // key -> the link's href
	tags := regexp.MustCompile(`<[^>]*>`) // the <wbr> in keys, and the empty key's <em>
	for _, m := range regexp.MustCompile(`<a href="([^"]*)">(.*?)</a>`).FindAllStringSubmatch(body, -1) {
		if strings.HasPrefix(m[1], "/kinds/items/models/") {
			hrefs[html.UnescapeString(tags.ReplaceAllString(m[2], ""))] = html.UnescapeString(m[1])
		}
	}
	dataURL := regexp.MustCompile(`id="trigger-model" data-url="([^"]*)"`)
	for _, key := range awkwardKeys {
		shown := key
		if key == "" {
			shown = "(empty key)"
		}
		href, ok := hrefs[shown]
		if !ok {
			t.Errorf("key %q: no link on the kind page", key)
			continue
		}
		ref, err := url.Parse(href)
		if err != nil {
			t.Errorf("key %q: link %q: %v", key, href, err)
			continue
		}
		u := base.ResolveReference(ref) // what a browser requests
		st, _, page := f.get("GET", u.RequestURI())
		if h1 := regexp.MustCompile(`<h1 class="uid">(.*?)</h1>`).FindStringSubmatch(page); st != 200 || h1 == nil || html.UnescapeString(tags.ReplaceAllString(h1[1], "")) != shown {
			t.Errorf("key %q: link %q opens %s: %d, not the model's page", key, href, u.RequestURI(), st)
			continue
		}
		m := dataURL.FindStringSubmatch(page)
		if m == nil {
			t.Errorf("key %q: no Refresh now on its page", key)
			continue
		}
		ref, _ = url.Parse(html.UnescapeString(m[1]))
		var res ChangeResult
		if st := f.do("POST", base.ResolveReference(ref).RequestURI(), testToken, nil, &res); st != 200 || res.UID != key {
			t.Errorf("key %q: trigger through %q: %d, acted on %q", key, m[1], st, res.UID)
		}
	}
}

func TestPagesAnswerHTML(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		method, path string
		status       int
		says         string
	}{
		{"GET", "/kinds/nope", 404, "No kind &#34;nope&#34; is configured."},
		{"GET", "/kinds/nope/dead", 404, "No kind &#34;nope&#34; is configured."},
		{"GET", "/kinds/items/models/nope", 404, "No model &#34;nope&#34; in table items."},
		{"GET", "/nope", 404, "No page at /nope."},
		{"POST", "/kinds/items", 405, "The pages are read with GET, not POST"},
	} {
		st, ct, body := f.get(c.method, c.path)
		if st != c.status || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, c.says) || !strings.Contains(body, `<a href="/">`) {
			t.Errorf("%s %s: %d %s, want %d HTML saying %q:\n%.600s", c.method, c.path, st, ct, c.status, c.says, body)
		}
	}
	// The API keeps answering JSON.
	for _, p := range []string{"/api/v1/kinds/nope/models", "/api/v1/nope"} {
		st, ct, body := f.get("GET", p)
		var e map[string]string
		if st != 404 || !strings.HasPrefix(ct, "application/json") || json.Unmarshal([]byte(body), &e) != nil || e["error"] == "" {
			t.Errorf("GET %s: %d %s %q, want a JSON 404", p, st, ct, body)
		}
	}
}

// TestModelPageShowsApplicableActions: Enable only for a disabled model,
// Refresh now only where it changes something.
func TestModelPageShowsApplicableActions(t *testing.T) {
	f := newFixture(t, nil)
	h := f.serve(nil) // a server with a token of role act: the page offers actions
	for _, c := range []struct {
		uid             string
		enable, trigger bool
		hint            string
	}{
		{"ok-1", false, true, ""},
		{"failing-1", false, true, ""},
		{"off-3", true, false, ""},
		{"running-1", false, false, "an attempt is running"},
		{"late-1", false, false, "already due"},
	} {
		st, body, _ := get(t, h, "GET", "/kinds/items/models/"+c.uid, "", "")
		if st != 200 {
			t.Fatalf("%s: %d", c.uid, st)
		}
		if got := strings.Contains(body, `id="enable-model"`); got != c.enable {
			t.Errorf("%s: Enable shown %v, want %v", c.uid, got, c.enable)
		}
		if got := strings.Contains(body, `id="trigger-model"`); got != c.trigger {
			t.Errorf("%s: Refresh now shown %v, want %v", c.uid, got, c.trigger)
		}
		if c.hint != "" && !strings.Contains(body, c.hint) {
			t.Errorf("%s: no hint %q", c.uid, c.hint)
		}
	}
	// The whole kind paused: a due model waits for the resume, not for
	// the next dispatch.
	if st, _, _ := get(t, h, "POST", "/api/v1/kinds/items/pause", "Bearer "+testToken, ""); st != 200 {
		t.Fatalf("pause the kind: %d", st)
	}
	_, body, _ := get(t, h, "GET", "/kinds/items/models/late-1", "", "")
	if want := "already due: the first dispatch after the kind is resumed starts it"; !strings.Contains(body, want) {
		t.Errorf("late-1 of a paused kind: no hint %q", want)
	}
}
