package operator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium binary (`make test` installs Debian's through
// scripts/browser.sh); "" when there is none.
func chromium() string {
	if p := os.Getenv("REFRESHER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInBrowser drives the dashboard in real headless Chromium:
// the overview, a disabled model and its reason, an action refused without
// a token, a bulk re-enable previewed as a dry run and then confirmed, and
// a model and the kind paused with a note that then shows.
// It saves a screenshot of each step in $REFRESHER_SCREENSHOTS (default: a
// temporary directory), named in the log.
func TestDashboardInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found: run scripts/browser.sh (make test does) or set REFRESHER_CHROMIUM")
	}
	f := newFixture(t, map[string]string{"ops": testToken})
	shots := os.Getenv("REFRESHER_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.WindowSize(1366, 860),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute) // a loaded shared machine is slow; the steps wait on the page, not on this
	defer cancel()

	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil { // 100: PNG (less is JPEG)
				return err
			}
			path := filepath.Join(shots, name+".png")
			t.Logf("screenshot %s", path)
			return os.WriteFile(path, png, 0o644)
		})
	}
	run := func(step string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
		return s
	}

	// 1. The overview.
	run("overview", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("table.overview", chromedp.ByQuery), shot("1-overview"))
	if row := text("table.overview tbody tr"); !strings.Contains(row, "items") || !strings.Contains(row, "interactive") {
		t.Fatalf("overview row: %q", row)
	}

	// 2. The disabled models, then one of them and its reason.
	run("disabled list", chromedp.Click(`a[href="/kinds/items?state=disabled"]`, chromedp.ByQuery),
		chromedp.WaitVisible("table.models", chromedp.ByQuery), shot("2-disabled-list"))
	run("open model", chromedp.Click(`a[href="/kinds/items/models/off-3"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#reason", chromedp.ByQuery), shot("3-disabled-model"))
	if r := text("#reason"); r != "Provided URL is invalid" {
		t.Fatalf("reason: %q", r)
	}

	// 3. An action without a token is refused, and says why.
	run("enable without token", chromedp.Click(`button.action[data-url$="/enable"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#flash.fail", chromedp.ByQuery), shot("4-refused-without-token"))
	if msg := text("#flash"); !strings.Contains(msg, "refused") || !strings.Contains(msg, "needs a token") {
		t.Fatalf("flash: %q", msg)
	}

	// 4. With the token: bulk re-enable of the incident's models, dry run first.
	run("token", chromedp.SendKeys("#token", testToken, chromedp.ByQuery), chromedp.Click(`#token-form button[type="submit"]`, chromedp.ByQuery))
	if s := text("#token-state"); s != "token set for this tab" {
		t.Fatalf("token state: %q", s)
	}
	run("bulk dry run", chromedp.Navigate(f.http.URL+"/kinds/items/bulk"), chromedp.WaitVisible("#bulk-form", chromedp.ByQuery),
		chromedp.SendKeys("#disabled_since", "2026-03-04T08:00:00Z", chromedp.ByQuery),
		chromedp.Click(`#bulk-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#bulk-confirm", chromedp.ByQuery), shot("5-bulk-dry-run"))
	if c := text("#bulk-count"); !strings.Contains(c, "2 disabled model(s) match") {
		t.Fatalf("dry run: %q", c)
	}
	var page ModelPage
	f.do("GET", "/api/v1/kinds/items/models?state=disabled", "", nil, &page)
	if len(page.Items) != 4 {
		t.Fatalf("the dry run changed something: %d disabled", len(page.Items))
	}
	run("bulk confirm", chromedp.Click("#bulk-confirm", chromedp.ByQuery), chromedp.WaitVisible("#bulk-done", chromedp.ByQuery), shot("6-bulk-done"))
	if d := text("#bulk-done"); !strings.Contains(d, "Re-enabled 2 model(s)") {
		t.Fatalf("confirm: %q", d)
	}
	page = ModelPage{}
	f.do("GET", "/api/v1/kinds/items/models?state=disabled", "", nil, &page)
	if len(page.Items) != 2 {
		t.Fatalf("after the bulk re-enable: %d disabled, want 2", len(page.Items))
	}

	// 5. Pause a model with a note and see the note, who paused, and the
	// model in the paused list and on the overview.
	note := "upstream migrates its API until 18:00 — ticket OPS-1234"
	run("pause model", chromedp.Navigate(f.http.URL+"/kinds/items/models/ok-1"), chromedp.WaitVisible("#pause-model", chromedp.ByQuery),
		chromedp.SendKeys("#pause-note-input", note, chromedp.ByQuery), chromedp.Click("#pause-model", chromedp.ByQuery),
		chromedp.WaitVisible("#pause-note", chromedp.ByQuery), shot("7-paused-model"))
	if n, by := text("#pause-note"), text("#pause-by"); n != note || by != "ops" {
		t.Fatalf("pause note %q by %q", n, by)
	}
	if s := text("p.summary"); !strings.Contains(s, "paused by ops") {
		t.Fatalf("summary: %q", s)
	}
	run("paused list", chromedp.Navigate(f.http.URL+"/kinds/items?state=paused"), chromedp.WaitVisible("table.models", chromedp.ByQuery), shot("8-paused-list"))
	if row := text("table.models tbody tr"); !strings.Contains(row, "ok-1") || !strings.Contains(row, note) {
		t.Fatalf("paused list row: %q", row)
	}
	run("resume model", chromedp.Navigate(f.http.URL+"/kinds/items/models/ok-1"), chromedp.WaitVisible("#resume-model", chromedp.ByQuery),
		chromedp.Click("#resume-model", chromedp.ByQuery), chromedp.WaitVisible("#pause-model", chromedp.ByQuery))
	if msg := text("#flash"); !strings.Contains(msg, "resumed; next refresh at 2026-03-05T02:00:00Z") {
		t.Fatalf("resume flash: %q", msg)
	}
	run("pause kind", chromedp.Navigate(f.http.URL+"/kinds/items"), chromedp.WaitVisible("#pause-kind", chromedp.ByQuery),
		chromedp.SendKeys("#kind-note-input", "incident 42: database failover", chromedp.ByQuery), chromedp.Click("#pause-kind", chromedp.ByQuery),
		chromedp.WaitVisible("#kind-pause", chromedp.ByQuery), shot("9-paused-kind"))
	run("overview paused", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("table.overview", chromedp.ByQuery), shot("10-overview-paused"))
	if row := text("table.overview tbody tr"); !strings.Contains(row, "paused by ops: incident 42") {
		t.Fatalf("overview row: %q", row)
	}

	// 6. The other pages, for the screenshots: a failing model's timeline and the dead letters.
	run("failing model", chromedp.Navigate(f.http.URL+"/kinds/items/models/failing-1"), chromedp.WaitVisible("svg.timeline", chromedp.ByQuery), shot("11-failing-model"))
	run("dead letters", chromedp.Navigate(f.http.URL+"/kinds/items/dead"), chromedp.WaitVisible("table.dead", chromedp.ByQuery), shot("12-dead-letters"))
	run("long uid", chromedp.Navigate(f.http.URL+"/kinds/items/models/"+page.Items[0].UID), chromedp.WaitVisible("#reason", chromedp.ByQuery), shot("13-long-uid"))

	// 7. A held throttle group and an incident: on the model (its box, its
	// summary, the hold's end on the timeline) and on the overview.
	f.holdGroup("api.example.com", now.Add(10*time.Minute))
	f.incident(50, 45)
	f.srv.invalidate() // the overview's counts are cached
	run("throttled model", chromedp.Navigate(f.http.URL+"/kinds/items/models/failing-1"), chromedp.WaitVisible("#throttle", chromedp.ByQuery),
		chromedp.WaitVisible("svg.timeline .ev-held", chromedp.ByQuery), shot("14-throttled-model-in-incident"))
	if g, until := text("#throttle-group"), text("#throttle-until"); g != "api.example.com" || until != "2026-03-04 14:10:00" {
		t.Fatalf("throttle box: group %q until %q", g, until)
	}
	if s := text("p.summary"); !strings.Contains(s, "held with its throttle group api.example.com until 14:10") || !strings.Contains(s, "in an incident") {
		t.Fatalf("summary: %q", s)
	}
	if s := text("#incident"); !strings.Contains(s, "45 of 50 results of the kind failed in the last 5m") {
		t.Fatalf("incident box: %q", s)
	}
	var held string // SVG has no innerText
	run("read the hold on the timeline", chromedp.TextContent("svg.timeline .ev-held", &held, chromedp.ByQuery))
	if !strings.Contains(held, "hold ends") || !strings.Contains(held, "14:10") {
		t.Fatalf("timeline: %q", held)
	}
	run("overview in incident", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("table.overview", chromedp.ByQuery), shot("15-overview-incident"))
	if row := text("table.overview tbody tr"); !strings.Contains(row, "incident: 45 of 50 results failed in 5m") || !strings.Contains(row, "1 throttle group(s) held") {
		t.Fatalf("overview row: %q", row)
	}
}
