package operator

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// browser is a headless Chromium driven through chromedp, with the page
// emulated at a size.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// newBrowser starts Chromium (bin) and sizes its page with size (e.g.
// chromedp.EmulateViewport). Screenshots go to $REFRESHER_SCREENSHOTS
// (default: a temporary directory), named in the log.
func newBrowser(t *testing.T, bin string, size chromedp.Action) *browser {
	t.Helper()
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
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute) // a loaded shared machine is slow; the steps wait on the page, not on this
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx, shots: shots}
	b.run("size the page", size)
	return b
}

// run runs the actions of a step and fails the test, naming the step, on
// an error.
func (b *browser) run(step string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
}

// shot saves a screenshot of the whole page as name.png.
func (b *browser) shot(name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil { // 100: PNG (less is JPEG)
			return err
		}
		path := filepath.Join(b.shots, name+".png")
		b.t.Logf("screenshot %s", path)
		return os.WriteFile(path, png, 0o644)
	})
}

// text is the rendered text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// TestDashboardInBrowser drives the dashboard in real headless Chromium:
// the overview, a disabled model and its reason, an action refused without
// a token, a bulk re-enable previewed as a dry run and then confirmed, and
// a model and the kind paused with a note that then shows.
// It saves a screenshot of each step (see newBrowser).
func TestDashboardInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found: run scripts/browser.sh (make test does) or set REFRESHER_CHROMIUM")
	}
	f := newFixture(t, map[string]string{"ops": testToken})
	b := newBrowser(t, bin, chromedp.EmulateViewport(1366, 860))
	run, shot, text := b.run, b.shot, b.text

	// 1. The overview.
	run("overview", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("table.overview", chromedp.ByQuery), shot("1-overview"))
	if row := text("table.overview tbody tr"); !strings.Contains(row, "items") || !strings.Contains(row, "interactive") || !strings.Contains(row, "0: 3") {
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

// phoneWidth is the CSS width of a common phone's screen.
const phoneWidth = 390

// offScreen is a script: the elements with text that match a selector and
// stick out of the viewport (or are not rendered), by their first 40
// characters.
const offScreen = `(sel) => [...document.querySelectorAll(sel)].filter(e => e.textContent.trim() !== "").filter(e => {
	const r = e.getBoundingClientRect();
	return r.width === 0 || r.left < -0.5 || r.right > document.documentElement.clientWidth + 0.5;
}).map(e => e.textContent.trim().slice(0, 40))`

// badBreaks is a script: the characters of an element's text that start a
// new line without following a separator (- / _ . or a space): a key
// broken mid-word. A word wider than the line may break anywhere, so keys
// used with it have no such word.
const badBreaks = `(el) => {
	const bad = [], walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
	let prev = null, prevChar = "";
	for (let n = walk.nextNode(); n; n = walk.nextNode()) {
		for (let i = 0; i < n.data.length; i++) {
			const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
			const box = r.getClientRects()[0];
			if (!box) continue;
			if (prev !== null && box.top > prev + 2 && !"-/_. ".includes(prevChar)) bad.push(prevChar + "|" + n.data[i]);
			prev = box.top; prevChar = n.data[i];
		}
	}
	return bad;
}`

// TestDashboardAtPhoneWidth renders the pages at a phone's width (390 CSS
// pixels) in headless Chromium and checks that what matters is on screen
// without scrolling sideways: the Failing and Disabled counts of the
// overview, every model's uid and reason on the kind page, the dead
// letters' errors; that keys break only after a separator; and that the
// timeline's text is as large as the page's. It also opens models whose
// keys need escaping from their links and acts on them. Screenshots:
// phone-*.png (see newBrowser).
func TestDashboardAtPhoneWidth(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found: run scripts/browser.sh (make test does) or set REFRESHER_CHROMIUM")
	}
	f := newFixture(t, map[string]string{"ops": testToken})
	pathKey := "customer-42/reports/2026-q3_summary-of-all-regional-sales.pdf"
	f.addModels(append(awkwardKeys, pathKey)...)
	b := newBrowser(t, bin, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))

	onScreen := func(sel string) {
		t.Helper()
		var off []string
		b.run("measure "+sel, chromedp.Evaluate("("+offScreen+")("+strconv.Quote(sel)+")", &off))
		if len(off) > 0 {
			t.Errorf("at %d px, %s off screen: %q", phoneWidth, sel, off)
		}
		var n int
		b.run("count "+sel, chromedp.Evaluate("[...document.querySelectorAll("+strconv.Quote(sel)+")].filter(e => e.textContent.trim() !== '').length", &n))
		if n == 0 {
			t.Errorf("no %s with text on the page", sel)
		}
	}
	noSidewaysScroll := func(page string) {
		t.Helper()
		var sw, cw int
		b.run("page width", chromedp.Evaluate("document.documentElement.scrollWidth", &sw), chromedp.Evaluate("document.documentElement.clientWidth", &cw))
		if sw > cw {
			t.Errorf("%s at %d px scrolls sideways: %d px wide", page, phoneWidth, sw)
		}
	}

	b.run("overview", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("table.overview", chromedp.ByQuery), b.shot("phone-1-overview"))
	onScreen(`table.overview td[data-label="Failing"]`)
	onScreen(`table.overview td[data-label="Disabled"]`)
	onScreen(`table.overview td[data-label="Late"]`)
	noSidewaysScroll("the overview")

	b.run("kind", chromedp.Navigate(f.http.URL+"/kinds/items?limit=100"), chromedp.WaitVisible("table.models", chromedp.ByQuery), b.shot("phone-2-kind"))
	onScreen("table.models td.uid")
	onScreen("table.models td.reason")
	noSidewaysScroll("the kind page")
	var lines map[string]int // uid -> lines its link takes
	b.run("uid lines", chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll("td.uid a")].map(a =>
		[a.textContent, Math.round(a.getBoundingClientRect().height / parseFloat(getComputedStyle(a).lineHeight))]))`, &lines))
	for _, k := range []string{"failing-1", "running-1", "with space", "a/b"} {
		if lines[k] != 1 {
			t.Errorf("uid %q takes %d lines at %d px, want 1 (lines: %v)", k, lines[k], phoneWidth, lines)
		}
	}
	var bad []string
	b.run("path key breaks", chromedp.Evaluate(`(`+badBreaks+`)([...document.querySelectorAll("td.uid a")].find(a => a.textContent === `+strconv.Quote(pathKey)+`))`, &bad))
	if len(bad) > 0 {
		t.Errorf("uid %q breaks mid-word at %q", pathKey, bad)
	}

	b.run("failing model", chromedp.Navigate(f.http.URL+"/kinds/items/models/failing-1"), chromedp.WaitVisible("h1.uid", chromedp.ByQuery), b.shot("phone-3-model"))
	noSidewaysScroll("the model page")
	var sizes []float64 // the rendered size of the timeline's texts, in CSS pixels
	b.run("timeline text", chromedp.Evaluate(`[...document.querySelectorAll(".timeline-view text, .timeline-list span")].filter(e => e.getClientRects().length > 0).map(e => e.getBoundingClientRect().height)`, &sizes))
	if len(sizes) < 3 {
		t.Errorf("the timeline shows %d texts at %d px", len(sizes), phoneWidth)
	}
	for _, h := range sizes {
		if h < 14 {
			t.Errorf("timeline text %.1f px high at %d px wide, too small to read (sizes %v)", h, phoneWidth, sizes)
			break
		}
	}
	onScreen(".timeline-view")

	b.run("dead letters", chromedp.Navigate(f.http.URL+"/kinds/items/dead"), chromedp.WaitVisible("table.dead", chromedp.ByQuery), b.shot("phone-4-dead"))
	onScreen("table.dead td.reason")
	noSidewaysScroll("the dead letters")

	long := "a-very-long-model-uid-" + strings.Repeat("x", 150)
	b.run("long uid", chromedp.Navigate(f.http.URL+"/kinds/items/models/"+long), chromedp.WaitVisible("#reason", chromedp.ByQuery), b.shot("phone-6-long-uid"))
	noSidewaysScroll("a disabled model with a long uid and reason")
	onScreen("#enable-model")
	b.run("bulk", chromedp.Navigate(f.http.URL+"/kinds/items/bulk"), chromedp.WaitVisible("#bulk-form", chromedp.ByQuery), b.shot("phone-7-bulk"))
	noSidewaysScroll("the bulk re-enable")
	b.run("no such kind", chromedp.Navigate(f.http.URL+"/kinds/nope"), chromedp.WaitVisible("#error-message", chromedp.ByQuery), b.shot("phone-8-no-kind"))
	noSidewaysScroll("the error page")

	// Every awkward key opens from its link and takes an action from its page.
	b.run("token", chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", testToken, chromedp.ByQuery), chromedp.Click(`#token-form button[type="submit"]`, chromedp.ByQuery))
	for i, key := range awkwardKeys {
		shown := cmp.Or(key, "(empty key)")
		var clicked bool
		b.run("open "+key, chromedp.Navigate(f.http.URL+"/kinds/items?limit=100"), chromedp.WaitVisible("table.models", chromedp.ByQuery),
			chromedp.Evaluate(`(() => { const a = [...document.querySelectorAll("td.uid a")].find(a => a.textContent === `+strconv.Quote(shown)+`); if (a) a.click(); return !!a; })()`, &clicked))
		if !clicked {
			t.Errorf("key %q: no link on the kind page", key)
			continue
		}
		var h1 string
		b.run("model "+key, chromedp.WaitVisible("h1.uid", chromedp.ByQuery), chromedp.TextContent("h1.uid", &h1, chromedp.ByQuery))
		if h1 != shown {
			var loc string
			b.run("location", chromedp.Location(&loc))
			t.Errorf("key %q: its link opened %s, showing %q", key, loc, h1)
			continue
		}
		if i == 0 {
			b.run("shot", b.shot("phone-5-dotdot-model"))
		}
		b.run("trigger "+key, chromedp.Click("#trigger-model", chromedp.ByQuery), chromedp.WaitVisible("#flash.ok", chromedp.ByQuery))
		if msg := b.text("#flash"); !strings.Contains(msg, strings.TrimSpace("refresh "+key)+" now") || !strings.Contains(msg, "due now") {
			t.Errorf("key %q: Refresh now: %q", key, msg)
		}
	}
}
