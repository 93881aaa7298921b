package operator

import (
	"net/http"
	"net/url"
	"strings"
)

// A model's key is one segment of its URLs (/kinds/{kind}/models/{uid} and
// /api/v1/kinds/{kind}/models/{uid}/...). Percent-escaping carries every
// character ("/" as %2F, "%" as %25, "?" as %3F, "#" as %23, a space as
// %20), but not the keys "." and "..": browsers and fetch() resolve such a
// segment, even written %2E%2E, as a step up the path, so the link would
// open another page. Those keys, the empty key, and keys that start with
// "!" are therefore written with one "!" in front ("!..", "!!x"), and the
// routes drop it. The mapping is one to one: a segment that starts with
// "!" always carries one extra "!".

// keyMark marks an escaped key segment. url.PathEscape writes "!" as %21,
// and the router decodes both spellings alike, so it is the mark either
// way.
const keyMark = "!"

// keySegment is key escaped as one URL path segment; see above.
func keySegment(key string) string {
	if key == "" || key == "." || key == ".." || strings.HasPrefix(key, keyMark) {
		return keyMark + url.PathEscape(key)
	}
	return url.PathEscape(key)
}

// keyOf undoes keySegment on a segment the router has already
// percent-decoded.
func keyOf(segment string) string {
	return strings.TrimPrefix(segment, keyMark)
}

// modelKey is the key of the model a request's {uid} names.
func modelKey(r *http.Request) string { return keyOf(r.PathValue("uid")) }
