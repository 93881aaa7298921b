package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/redisio"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestClassify(t *testing.T) {
	t.Parallel()
	const u = "https://example.com/a.csv"
	invalid := func(url, reason string) redisio.Result {
		return redisio.Result{Type: redisio.ResultFailure, Permanent: true, Reason: reason,
			UserFriendlyReason: "Provided URL is invalid: " + url}
	}
	fail := func(reason string, retryAfter int) redisio.Result {
		return redisio.Result{Type: redisio.ResultFailure, Reason: reason, RetryAfterSeconds: retryAfter}
	}
	resp := func(code int, retryAfter string) Outcome {
		return Outcome{URL: u, StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), RetryAfter: retryAfter}
	}
	dnsNotFound := &url.Error{Op: "Get", URL: "https://nope.invalid/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}}
	dnsTemporary := &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "server misbehaving", Name: "example.com", IsTemporary: true}}}
	dnsTimeout := &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "i/o timeout", Name: "example.com", IsTimeout: true}}}
	notAllowed := &url.Error{Op: "Get", URL: "http://169.254.169.254/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &NotAllowedError{Addr: netip.MustParseAddr("169.254.169.254"), Class: "link-local"}}}
	refused := &url.Error{Op: "Get", URL: u, Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}

	tests := []struct {
		name string
		in   Outcome
		want redisio.Result
	}{
		{"200", Outcome{URL: u, StatusCode: 200, Status: "200 OK", Bytes: 1234},
			redisio.Result{Type: redisio.ResultSuccess, Status: "fetched 1234 bytes"}},
		{"204 empty", Outcome{URL: u, StatusCode: 204, Status: "204 No Content"},
			redisio.Result{Type: redisio.ResultSuccess, Status: "fetched 0 bytes"}},
		{"404", resp(404, ""), invalid(u, "GET "+u+": HTTP 404 Not Found")},
		{"410", resp(410, ""), invalid(u, "GET "+u+": HTTP 410 Gone")},
		{"empty URL", Outcome{URL: ""}, invalid("", `malformed URL "": scheme must be http or https`)},
		{"unparsable URL", Outcome{URL: "http://exa mple.com/"},
			invalid("http://exa mple.com/", `malformed URL "http://exa mple.com/": invalid character " " in host name`)},
		{"ftp URL", Outcome{URL: "ftp://example.com/a"}, invalid("ftp://example.com/a", `malformed URL "ftp://example.com/a": scheme must be http or https`)},
		{"no host", Outcome{URL: "https:///a.csv"}, invalid("https:///a.csv", `malformed URL "https:///a.csv": no host`)},
		{"relative", Outcome{URL: "example.com/a.csv"}, invalid("example.com/a.csv", `malformed URL "example.com/a.csv": scheme must be http or https`)},
		{"unresolvable host", Outcome{URL: "https://nope.invalid/", Err: dnsNotFound},
			invalid("https://nope.invalid/", "GET https://nope.invalid/: no such host nope.invalid")},
		{"DNS server failure is not permanent", Outcome{URL: u, Err: dnsTemporary},
			fail("GET "+u+": cannot resolve example.com: server misbehaving", 0)},
		{"DNS timeout is not permanent", Outcome{URL: u, Err: dnsTimeout, Timeout: 30 * time.Second},
			fail("GET "+u+": cannot resolve example.com: i/o timeout", 0)},
		{"address not allowed", Outcome{URL: "http://metadata.example/", Err: notAllowed},
			redisio.Result{Type: redisio.ResultFailure, Permanent: true,
				Reason:             "GET http://metadata.example/: refused: the address is not public (link-local); allow it with the worker's allow_private_networks or allow_networks",
				UserFriendlyReason: "Provided URL is not allowed: http://metadata.example/"}},
		{"body over the limit", Outcome{URL: u, StatusCode: 200, Status: "200 OK", Bytes: 1001, Err: &BodyTooLargeError{Limit: 1000}},
			fail("GET "+u+": response body is larger than the limit of 1000 bytes (raise the worker's max_body_bytes to allow it)", 0)},
		{"200 from a non-public address hides the size", Outcome{URL: u, StatusCode: 200, Status: "200 OK", Bytes: 1234, NonPublic: true},
			redisio.Result{Type: redisio.ResultSuccess, Status: "fetched"}},
		{"connection refused", Outcome{URL: u, Err: refused},
			fail("GET "+u+": dial tcp 127.0.0.1:1: connect: connection refused", 0)},
		{"timeout", Outcome{URL: u, Err: &url.Error{Op: "Get", URL: u, Err: context.DeadlineExceeded}, Timeout: 30 * time.Second},
			fail("GET "+u+": timeout after 30s", 0)},
		{"timeout reading body", Outcome{URL: u, StatusCode: 200, Status: "200 OK", Err: fmt.Errorf("read body: %w", context.DeadlineExceeded), Timeout: 2 * time.Second},
			fail("GET "+u+": timeout after 2s", 0)},
		{"body cut short", Outcome{URL: u, StatusCode: 200, Status: "200 OK", Err: fmt.Errorf("read body: %w", errors.New("unexpected EOF"))},
			fail("GET "+u+": read body: unexpected EOF", 0)},
		{"429 seconds", resp(429, "120"), fail("GET "+u+": HTTP 429 Too Many Requests (retry after 120s)", 120)},
		{"429 date", resp(429, now.Add(90*time.Second).Format(http.TimeFormat)),
			fail("GET "+u+": HTTP 429 Too Many Requests (retry after 90s)", 90)},
		{"429 date in the past", resp(429, now.Add(-time.Hour).Format(http.TimeFormat)),
			fail("GET "+u+": HTTP 429 Too Many Requests (retry after 0s)", 0)},
		{"429 without Retry-After", resp(429, ""), fail("GET "+u+": HTTP 429 Too Many Requests", 0)},
		{"429 unreadable Retry-After", resp(429, "soon"), fail("GET "+u+": HTTP 429 Too Many Requests", 0)},
		{"503 seconds", resp(503, "30"), fail("GET "+u+": HTTP 503 Service Unavailable (retry after 30s)", 30)},
		{"503 without Retry-After", resp(503, ""), fail("GET "+u+": HTTP 503 Service Unavailable", 0)},
		{"500 ignores Retry-After", resp(500, "30"), fail("GET "+u+": HTTP 500 Internal Server Error", 0)},
		{"502", resp(502, ""), fail("GET "+u+": HTTP 502 Bad Gateway", 0)},
		{"403 is not permanent", resp(403, ""), fail("GET "+u+": HTTP 403 Forbidden", 0)},
		{"304 not followed", resp(304, ""), fail("GET "+u+": HTTP 304 Not Modified", 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Classify(tt.in, now))
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 120 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"tomorrow", 0, false},
		{"604800", MaxRetryAfter, true},
		{"604801", MaxRetryAfter, true},
		{"99999999999999999999", 0, false}, // does not fit in uint64
		{"18446744073709551615", MaxRetryAfter, true},
		{now.Add(2 * time.Minute).Format(http.TimeFormat), 2 * time.Minute, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{now.Add(30 * 24 * time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true}, // RFC 850, still allowed
		{"Sun Mar  1 12:01:00 2026", time.Minute, true},       // asctime
	}
	for _, tt := range tests {
		d, ok := ParseRetryAfter(tt.header, now)
		require.Equal(t, tt.ok, ok, "ParseRetryAfter(%q)", tt.header)
		require.Equal(t, tt.want, d, "ParseRetryAfter(%q)", tt.header)
	}

	t.Run("date rounds up to a whole second", func(t *testing.T) {
		t.Parallel()
		at := now.Add(time.Minute).Format(http.TimeFormat)
		d, ok := ParseRetryAfter(at, now.Add(300*time.Millisecond))
		require.True(t, ok)
		require.Equal(t, time.Minute, d) // 59.7 s -> 60 s
	})
}
