package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"http://user:S3cretUrlPw1@host/a.csv", "http://xxxxx@host/a.csv"},
		{"https://ghp_tok3n@github.com/o/r.csv", "https://xxxxx@github.com/o/r.csv"},
		{"https://u:p@ss@host:8443/a?x=1", "https://xxxxx@host:8443/a?x=1"},
		{"https://host/a.csv?Token=abc&x=1&API_KEY=k1;sig=s2&keep=key", "https://host/a.csv?Token=xxxxx&x=1&API_KEY=xxxxx;sig=xxxxx&keep=key"},
		{"https://host/a?access%5Ftoken=abc", "https://host/a?access%5Ftoken=xxxxx"},
		{"https://host/a?password=&signature=z#access_token=t&state=1", "https://host/a?password=xxxxx&signature=xxxxx#access_token=xxxxx&state=1"},
		{"https://host/@user/feed?secret", "https://host/@user/feed?secret"},
		{"user:pw@host/a", "xxxxx@host/a"},
		{"http://u:pw@[::1:80/a", "http://xxxxx@[::1:80/a"},
		{"https://example.com/a.csv", "https://example.com/a.csv"},
		{"https://h/go?next=http://u:pw@evil/x?token=t&y=1", "https://h/go?next=http://xxxxx@evil/x?token=xxxxx&y=1"},
		{"https://web.archive.org/web/2020/http://u:pw@x/a", "https://web.archive.org/web/2020/http://xxxxx@x/a"},
		{"host/a/b@c", "host/a/b@c"},
		{"not a url", "not a url"},
		{"", ""},
	} {
		require.Equal(t, tt.want, URL(tt.in), tt.in)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"GET http://user:S3cretUrlPw1@host/a.csv: HTTP 500", "GET http://xxxxx@host/a.csv: HTTP 500"},
		{`malformed URL "http://u:pw@h/x?token=t": bad`, `malformed URL "http://xxxxx@h/x?token=xxxxx": bad`},
		{"see (https://h/a?key=k1), and ftp://a:b@c.", "see (https://h/a?key=xxxxx), and ftp://xxxxx@c."},
		{"no url here: user:pw@host", "no url here: user:pw@host"},
		{"two: http://a:1@x/ http://b:2@y/", "two: http://xxxxx@x/ http://xxxxx@y/"},
	} {
		require.Equal(t, tt.want, Text(tt.in), tt.in)
	}
}

// FuzzURL: whatever follows the host, the user information of a URL is
// gone from URL and from Text of a sentence that quotes the URL.
func FuzzURL(f *testing.F) {
	f.Add("S3cret", "a.csv?token=t")
	f.Add("p", "go?next=http://u:pw@x/#sig=1")
	f.Add("x", "://://@@?#&;=")
	f.Fuzz(func(t *testing.T, pw, rest string) {
		if pw == "" || strings.ContainsAny(pw, "/?#@") || strings.IndexFunc(pw, func(r rune) bool { return r <= ' ' || strings.ContainsRune("\"'`<>\x7f", r) }) >= 0 {
			t.Skip()
		}
		u := "http://user:" + pw + "@host/" + rest
		require.NotContains(t, URL(u), "user:"+pw)
		require.NotContains(t, Text("GET "+u+" failed"), "user:"+pw)
	})
}
