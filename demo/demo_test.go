package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// TestDemo runs `refresher demo --speed 120 --for 20s` on free ports and
// checks that the loop did what the README promises: refreshes, a permanent
// failure and an exhausted retry list disabled with their reasons, a
// throttled source not called again before its Retry-After (demo time), and
// a hanging source timed out and retried; a result that cannot be applied
// is dead-lettered at a demo time, and the end of --for is announced.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 20 s")
	}
	dir := t.TempDir()
	var out testenv.SyncBuffer
	var addrs Addrs
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{
			Data: dir, HTTP: "127.0.0.1:0", Speed: 120, For: 20 * time.Second,
			Out: &out, Ready: func(a Addrs) { addrs = a; close(ready) },
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("demo stopped before it was ready: %v\n%s", err, out.String())
	}

	// A result that is not JSON goes to the dead letters.
	rdb := redis.NewClient(&redis.Options{Addr: addrs.Redis})
	defer rdb.Close()
	if err := rdb.RPush(context.Background(), Kind+"-output", "not json").Err(); err != nil {
		t.Fatal(err)
	}

	// While it runs, the API shows what the dashboard shows, and a real
	// headless Chromium renders the dashboard. The demo runs for its 20 s
	// of --for in any case: the test waits for what it checks, not longer.
	var dead struct {
		Items []struct {
			At string `json:"at"`
		} `json:"items"`
	}
	var page struct {
		Items []struct {
			UID            string `json:"uid"`
			DisabledReason string `json:"disabled_reason"`
		} `json:"items"`
	}
	apiReasons := map[string]string{}
	testenv.EventuallyNil(t, 18*time.Second, "the dead letter and the disabled reports in the API", func() error {
		getJSON(t, addrs.Dashboard+"api/v1/kinds/reports/dead", &dead)
		getJSON(t, addrs.Dashboard+"api/v1/kinds/reports/models?state=disabled", &page)
		clear(apiReasons)
		for _, it := range page.Items {
			apiReasons[it.UID] = it.DisabledReason
		}
		if len(dead.Items) == 0 || apiReasons["missing-1"] == "" || apiReasons["down-1"] == "" {
			return fmt.Errorf("%d dead letters; disabled: %v", len(dead.Items), apiReasons)
		}
		return nil
	})
	if len(dead.Items) != 1 {
		t.Fatalf("%d dead letters, want the one pushed", len(dead.Items))
	}
	// The gauges run, and sample the due backlog and the lateness into the
	// charts' minutes (on the demo clock): most demo minutes have a sample.
	testenv.EventuallyNil(t, 15*time.Second, "the gauges' samples in the charts' minutes", func() error {
		lists, last := redisio.DefaultLists(Kind), addrs.Now().Unix()/60
		sampled := 0
		for m := last - 10; m < last; m++ {
			if ok, err := rdb.HExists(context.Background(), lists.StatsMinute(m), "backlog").Result(); err != nil {
				return err
			} else if ok {
				sampled++
			}
		}
		if sampled < 5 {
			return fmt.Errorf("%d of the last 10 demo minutes have a backlog sample", sampled)
		}
		return nil
	})
	at, err := time.Parse(time.RFC3339, dead.Items[0].At)
	if demoNow := addrs.Now(); err != nil || at.After(demoNow) || demoNow.Sub(at) > 40*time.Minute {
		t.Errorf("the dead letter's time %q is not on the demo clock (demo time now %s, real time %s)",
			dead.Items[0].At, demoNow.Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	}
	if r := apiReasons["missing-1"]; !strings.HasPrefix(r, "Provided URL is invalid: ") {
		t.Errorf("the API does not show missing-1 disabled with its reason: %v", apiReasons)
	}
	if dom := headlessDOM(t, addrs.Dashboard); dom != "" && !strings.Contains(dom, "reports") {
		t.Errorf("the dashboard in Chromium does not show the kind:\n%.2000s", dom)
	}
	if err := <-done; err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"dashboard   http://127.0.0.1:", "redis-cli -p ", "It stops after 20s (--for)",
		"refresher demo: stopped after --for 20s of real time", "Run longer with --for 10m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the intro does not show %q:\n%s", want, out.String())
		}
	}

	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "demo.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var reports []Report
	if err := db.Order("uid").Find(&reports).Error; err != nil {
		t.Fatal(err)
	}
	byUID := map[string]Report{}
	refreshed := 0
	for _, r := range reports {
		byUID[r.UID] = r
		if r.RefreshLastSuccessAt != nil {
			refreshed++
		}
	}
	if refreshed < 10 {
		t.Errorf("%d of %d reports were refreshed, want at least 10", refreshed, len(reports))
	}
	reason := func(uid string) string {
		if p := byUID[uid].RefreshDisabledUserFriendlyReason; p != nil {
			return *p
		}
		return ""
	}
	if r := reason("missing-1"); !strings.Contains(r, "/missing/1") {
		t.Errorf("missing-1 is not disabled with a reason naming its URL: %q", r)
	}
	if r := reason("down-1"); !strings.HasPrefix(r, "Cannot refresh this report after 4 attempts") {
		t.Errorf("down-1 is not disabled after its retries: %q", r)
	}

	calls := addrs.Calls("/throttled/1")
	if len(calls) < 2 {
		t.Fatalf("/throttled/1 was called %d times, want a 429 and a retry", len(calls))
	}
	if wait := calls[1].Sub(calls[0]); wait < 30*time.Minute {
		t.Errorf("/throttled/1 was retried %s (demo time) after its 429 with Retry-After: 1800", wait)
	}

	slow := addrs.Calls("/slow/1")
	if len(slow) < 2 {
		t.Fatalf("/slow/1 was called %d times, want a timeout and a retry", len(slow))
	}
	if e := byUID["slow-1"].RefreshLastError; e == nil || !strings.Contains(*e, "timed out") {
		t.Errorf("slow-1's last error is not a timeout: %v", e)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// headlessDOM loads url in Debian's headless Chromium and returns the DOM
// after its scripts ran; "" (and a log line) when there is no Chromium.
func headlessDOM(t *testing.T, url string) string {
	t.Helper()
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Log("no chromium on PATH: the dashboard is not checked in a browser (make test installs it)")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

// The demo serves its dashboard as `refresher run` does: on loopback only
// to a loopback Host (DNS rebinding), off loopback reads need the printed
// token.
func TestDemoDashboardAccess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo twice")
	}
	start := func(addr string) (Addrs, string) {
		ctx, cancel := context.WithCancel(context.Background())
		var out testenv.SyncBuffer
		ready, done := make(chan Addrs, 1), make(chan error, 1)
		go func() {
			done <- Run(ctx, Options{HTTP: addr, Speed: 1000, Out: &out, Ready: func(a Addrs) { ready <- a }})
		}()
		t.Cleanup(func() { cancel(); <-done })
		select {
		case a := <-ready:
			return a, out.String()
		case err := <-done:
			t.Fatalf("demo on %s stopped before it was ready: %v\n%s", addr, err, out.String())
		}
		return Addrs{}, ""
	}
	get := func(target, host, token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if token != "" {
			req.SetBasicAuth("", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s (Host %s): %v", target, host, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	local, _ := start("127.0.0.1:0")
	api := local.Dashboard + "api/v1/kinds"
	if got := get(api, "evil.example", ""); got != http.StatusMisdirectedRequest {
		t.Errorf("on loopback, Host evil.example: %d, want 421", got)
	}
	if got := get(api, "", ""); got != http.StatusOK {
		t.Errorf("on loopback, Host 127.0.0.1: %d, want 200", got)
	}

	open, intro := start("0.0.0.0:0")
	u, err := url.Parse(open.Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	api = "http://127.0.0.1:" + u.Port() + "/api/v1/kinds"
	_, token, _ := strings.Cut(intro, "and its actions: ")
	token, _, _ = strings.Cut(token, ")")
	if got := get(api, "", ""); got != http.StatusUnauthorized {
		t.Errorf("on 0.0.0.0, a read without the token: %d, want 401", got)
	}
	if got := get(api, "", token); got != http.StatusOK {
		t.Errorf("on 0.0.0.0, a read with the printed token %q: %d, want 200\n%s", token, got, intro)
	}
}
