package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/refresher/refresher/internal/redact"
	"github.com/refresher/refresher/redisio"
)

// MaxRetryAfter caps the Retry-After a worker passes on: a server that asks
// for more than 7 days is taken to mean 7 days, so that one misbehaving
// server cannot park a model for years (or overflow a time.Duration).
const MaxRetryAfter = 7 * 24 * time.Hour

// Outcome is what one GET of an input URL produced. It is plain data, so
// that Classify, which turns it into a result, is a pure function.
type Outcome struct {
	// URL is the payload's input_url, as the job gave it.
	URL string
	// Err is the error of the request or of reading the body; nil when a
	// response was read to its end.
	Err error
	// StatusCode and Status are the response's ("404", "404 Not Found").
	StatusCode int
	Status     string
	// RetryAfter is the response's Retry-After header, "" when absent.
	RetryAfter string
	// Bytes is the size of the body read.
	Bytes int64
	// NonPublic is true when a response came from an address that is not
	// public (allowed by AllowPrivateNetworks or AllowNetworks): its size is
	// then kept out of the status users see.
	NonPublic bool
	// Timeout is the time limit of the GET, used in the reason of a timeout.
	Timeout time.Duration
}

// Classify decides what to report about one GET (docs/protocol.md, "The reference worker"). It sets
// every field of the result but UID and AttemptUID.
//
//   - a malformed URL (unparsable, not http or https, no host), an
//     unresolvable host (DNS "no such host"), HTTP 404 or 410: permanent
//     failure with user_friendly_reason "Provided URL is invalid: <url>";
//   - an address the AddressPolicy refused (also after a redirect), or a
//     redirect to a scheme other than http and https (file:, gopher:, ...):
//     permanent failure with user_friendly_reason "Provided URL is not
//     allowed: <url>", which names neither the address nor the port;
//   - HTTP 2xx: success with status "fetched <n> bytes", or just "fetched"
//     when the response came from a non-public address;
//   - a body over the size limit, a DNS timeout or server failure: failure
//     (the retry policy applies);
//   - HTTP 429 or 503 with a Retry-After in seconds or as an HTTP date
//     (relative to now, rounded up to a whole second, capped at
//     MaxRetryAfter): failure with retry_after_seconds;
//   - anything else (timeout, connection error, other 4xx and 5xx): failure
//     with a short technical reason such as
//     "GET https://example.com/a.csv: HTTP 500 Internal Server Error".
//
// Every URL in the reasons is redacted (redact.URL): user information and
// the values of parameters such as token or password never leave the
// worker, in the result or in its log.
func Classify(o Outcome, now time.Time) redisio.Result {
	r := classify(o, now)
	r.Reason = redact.Text(r.Reason)
	r.UserFriendlyReason = redact.Text(r.UserFriendlyReason)
	return r
}

// classify is Classify before the final redaction of its reasons, which
// catches URLs quoted by errors (a redirect's Location, a driver's text).
func classify(o Outcome, now time.Time) redisio.Result {
	shown := redact.URL(o.URL)
	invalid := redisio.Result{
		Type:               redisio.ResultFailure,
		Permanent:          true,
		UserFriendlyReason: "Provided URL is invalid: " + shown,
	}
	if err := ValidateURL(o.URL); err != nil {
		invalid.Reason = err.Error()
		return invalid
	}
	prefix := "GET " + shown + ": "
	if o.Err != nil {
		var (
			dnsErr   *net.DNSError
			refused  *NotAllowedError
			tooLarge *BodyTooLargeError
		)
		switch {
		case errors.As(o.Err, &refused):
			return redisio.Result{
				Type:               redisio.ResultFailure,
				Permanent:          true,
				Reason:             prefix + "refused: the address is not public (" + refused.Class + "); allow it with the worker's allow_private_networks or allow_networks",
				UserFriendlyReason: "Provided URL is not allowed: " + shown,
			}
		case redirectScheme(o.Err) != "":
			// A redirect to file:, gopher:, ... is the URL's doing: asking
			// again gets the same redirect.
			return redisio.Result{
				Type:               redisio.ResultFailure,
				Permanent:          true,
				Reason:             prefix + "redirected to a " + redirectScheme(o.Err) + ": URL; the worker follows only http and https",
				UserFriendlyReason: "Provided URL is not allowed: " + shown,
			}
		case errors.As(o.Err, &tooLarge):
			return failure(prefix + tooLarge.Error())
		case errors.As(o.Err, &dnsErr) && dnsErr.IsNotFound:
			invalid.Reason = prefix + "no such host " + dnsErr.Name
			return invalid
		case errors.As(o.Err, &dnsErr):
			// A DNS timeout or server failure says nothing about the URL:
			// retry.
			return failure(prefix + "cannot resolve " + dnsErr.Name + ": " + dnsErr.Err)
		case isTimeout(o.Err):
			return failure(prefix + "timeout after " + o.Timeout.String())
		default:
			return failure(prefix + shortError(o.Err))
		}
	}
	httpReason := prefix + "HTTP " + o.Status
	switch code := o.StatusCode; {
	case code >= 200 && code <= 299:
		if o.NonPublic {
			return redisio.Result{Type: redisio.ResultSuccess, Status: "fetched"}
		}
		return redisio.Result{Type: redisio.ResultSuccess, Status: fmt.Sprintf("fetched %d bytes", o.Bytes)}
	case code == http.StatusNotFound || code == http.StatusGone:
		invalid.Reason = httpReason
		return invalid
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		r := failure(httpReason)
		if d, ok := ParseRetryAfter(o.RetryAfter, now); ok {
			r.RetryAfterSeconds = int(d / time.Second)
			r.Reason += fmt.Sprintf(" (retry after %ds)", r.RetryAfterSeconds)
		}
		return r
	default:
		return failure(httpReason)
	}
}

// BodyTooLargeError is the error of a response body over the worker's
// MaxBodyBytes.
type BodyTooLargeError struct{ Limit int64 }

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("response body is larger than the limit of %d bytes (raise the worker's max_body_bytes to allow it)", e.Limit)
}

func failure(reason string) redisio.Result {
	return redisio.Result{Type: redisio.ResultFailure, Reason: reason}
}

// ValidateURL says why raw is not a URL a worker can GET: it must parse, use
// http or https, and name a host. The error quotes raw redacted.
func ValidateURL(raw string) error {
	u, err := url.Parse(raw)
	shown := redact.URL(raw)
	if err != nil {
		return fmt.Errorf("malformed URL %q: %w", shown, errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("malformed URL %q: scheme must be http or https", shown)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("malformed URL %q: no host", shown)
	}
	return nil
}

// ParseRetryAfter reads a Retry-After header (RFC 9110 section 10.2.3):
// either delay-seconds ("120") or an HTTP date, which counts from now. It
// returns the delay rounded up to a whole second and capped at
// MaxRetryAfter; a date in the past gives 0. ok is false when the header is
// absent or unreadable.
func ParseRetryAfter(header string, now time.Time) (d time.Duration, ok bool) {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(header, 10, 64); err == nil {
		if secs > uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(header)
	if err != nil {
		return 0, false
	}
	d = at.Sub(now)
	switch {
	case d <= 0:
		return 0, true
	case d > MaxRetryAfter:
		return MaxRetryAfter, true
	}
	return (d + time.Second - 1).Truncate(time.Second), true
}

// redirectScheme returns the scheme of the URL a request failed on when it
// is neither http nor https, "" otherwise. net/http reports a request with
// the URL it was at, so this is the scheme of a redirect's target (the
// first URL passed ValidateURL).
func redirectScheme(err error) string {
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		return ""
	}
	u, perr := url.Parse(urlErr.URL)
	if perr != nil || u.Scheme == "" || u.Scheme == "http" || u.Scheme == "https" {
		return ""
	}
	return u.Scheme
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// shortError drops the `Get "<url>": ` that net/http puts in front of every
// error: the reason already starts with "GET <url>: ".
func shortError(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}
