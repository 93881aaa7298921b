package operator

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWhyInBrowser drives the model page in headless Chromium, at a
// laptop's width and at a phone's (390 CSS pixels): a model with history
// (the ledger's past on the timeline and in the list, the why answer from
// a link and from the form), a disabled model and a paused model (their
// plan drawn as "will not run"). Nothing may scroll sideways on the phone.
// Screenshots: why-*.png (see newBrowser).
func TestWhyInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found: run scripts/browser.sh (make test does) or set REFRESHER_CHROMIUM")
	}
	f := newFixture(t, map[string]string{"ops": testToken})
	base := f.withLedger()
	if code := f.do("POST", "/api/v1/kinds/items/models/ok-1/pause", testToken, map[string]string{"note": "upstream migrates until 18:00"}, nil); code != http.StatusOK {
		t.Fatalf("pause: %d", code)
	}
	for _, size := range []struct {
		name string
		act  chromedp.Action
	}{
		{"laptop", chromedp.EmulateViewport(1366, 860)},
		{"phone", chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))},
	} {
		b := newBrowser(t, bin, size.act)
		phone := size.name == "phone"
		noSideways := func(page string) {
			t.Helper()
			var sw, cw int
			b.run("page width", chromedp.Evaluate("document.documentElement.scrollWidth", &sw), chromedp.Evaluate("document.documentElement.clientWidth", &cw))
			if phone && sw > cw {
				t.Errorf("%s at %d px scrolls sideways: %d px wide", page, phoneWidth, sw)
			}
		}
		onScreen := func(sel string) {
			t.Helper()
			var off []string
			b.run("measure "+sel, chromedp.Evaluate("("+offScreen+")("+strconv.Quote(sel)+")", &off))
			if len(off) > 0 {
				t.Errorf("%s: %s off screen: %q", size.name, sel, off)
			}
		}

		// The history and a why? link from it.
		b.run("history", chromedp.Navigate(base+"/kinds/items/models/hist-1"), chromedp.WaitVisible("#history", chromedp.ByQuery),
			b.shot("why-"+size.name+"-1-history"))
		if h := b.text("#history"); !strings.Contains(h, "kind paused") || !strings.Contains(h, "failed HTTP 503 from upstream; next try 03-04 02:21") ||
			!strings.Contains(h, "succeeded") {
			t.Errorf("%s: history: %q", size.name, h)
		}
		var points []string // the timeline's points, in time order
		b.run("timeline", chromedp.Evaluate(`[...document.querySelectorAll(".timeline-list li")].map(li => li.className + " " + li.textContent.trim().replace(/\s+/g, " "))`, &points))
		// The past from the ledger (no dispatches), now, then the plan.
		if want := []string{"ev-h-ok Mar 3 02:00 succeeded", "ev-h-pause 01:55 kind paused", "ev-h-pause 02:20 kind resumed",
			"ev-h-fail 02:20 failed", "ev-h-ok 02:22 succeeded", "ev-now 14:00 now", "ev-next Mar 5 02:00 next refresh"}; len(points) < len(want) ||
			strings.Join(points[:len(want)], "|") != strings.Join(want, "|") {
			t.Errorf("%s: timeline: %q", size.name, points)
		}
		b.run("why link", chromedp.Click(`#history li.h-fail a.why-link`, chromedp.ByQuery), chromedp.WaitVisible("#why-sentence", chromedp.ByQuery),
			b.shot("why-"+size.name+"-2-answer-from-history"))
		if s := b.text("#why-sentence"); !strings.Contains(s, "Mar 4 02:00 UTC was planned") || !strings.Contains(s, "failed at 02:20:30 (HTTP 503 from upstream)") {
			t.Errorf("%s: why from the history's link: %q", size.name, s)
		}
		onScreen("#why-sentence")
		noSideways("the why answer")

		// The form.
		b.run("why form", chromedp.Navigate(base+"/kinds/items/models/hist-1"), chromedp.WaitVisible("#why-at", chromedp.ByQuery),
			chromedp.SendKeys("#why-at", "2026-03-04 02:10", chromedp.ByQuery), chromedp.Click("#why-ask", chromedp.ByQuery),
			chromedp.WaitVisible("#why-sentence", chromedp.ByQuery), b.shot("why-"+size.name+"-3-answer-from-form"))
		if s := b.text("#why-sentence"); s != whyHist {
			t.Errorf("%s: why from the form: %q", size.name, s)
		}
		b.run("bad time", chromedp.Navigate(base+"/kinds/items/models/hist-1?at=soon"), chromedp.WaitVisible("#why-error", chromedp.ByQuery))
		if s := b.text("#why-error"); !strings.Contains(s, `at="soon": use RFC 3339`) {
			t.Errorf("%s: bad time: %q", size.name, s)
		}

		// A disabled model and a paused one: their plan will not run.
		for i, m := range []struct{ uid, blocked string }{
			{"off-3", "will not run: the model is disabled until the user updates it or an operator enables it"},
			{"ok-1", "will not run: the model is paused until it is resumed"},
		} {
			b.run(m.uid, chromedp.Navigate(base+"/kinds/items/models/"+m.uid), chromedp.WaitVisible("#blocked", chromedp.ByQuery),
				b.shot("why-"+size.name+"-"+strconv.Itoa(4+i)+"-"+m.uid))
			if s := b.text("#blocked"); !strings.Contains(s, m.blocked) {
				t.Errorf("%s %s: %q", size.name, m.uid, s)
			}
			var planned, blocked int
			b.run("dots", chromedp.Evaluate(`document.querySelectorAll(".ev-occurrence").length`, &planned),
				chromedp.Evaluate(`document.querySelectorAll(".timeline-list .ev-blocked").length`, &blocked))
			if planned != 0 || blocked == 0 {
				t.Errorf("%s %s: %d planned dots, %d will-not-run", size.name, m.uid, planned, blocked)
			}
			if h := b.text("#history"); !strings.Contains(h, "kind paused by ops: incident 42") || strings.Contains(h, "succeeded") {
				t.Errorf("%s %s: history: %q", size.name, m.uid, h)
			}
			noSideways(m.uid)
		}
	}
}
