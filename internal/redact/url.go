package redact

import (
	"strings"
)

// URL returns raw, a URL as a user wrote it, with its user information
// (everything before the '@' of the authority, user name included: a user
// name alone is often a token) replaced by Mask, and with the value of every
// query or fragment parameter named in secretParams (password, token, key,
// secret, signature, sig, access_token, api_key, ...; any case) replaced by
// Mask. A URL inside it (https://host/go?next=http://u:pw@other/) is
// redacted too. The rest is kept byte for byte. It works on the text, so a
// URL that does not parse is redacted too; without a scheme the authority
// is taken to start the text ("user:pw@host/path").
func URL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i > 0 && isScheme(raw[:i]) {
		start = i + 3
	}
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	authority := raw[start:end]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = Mask + authority[at:]
	}
	rest := raw[end:]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i] + maskTail(rest[i:])
	}
	if strings.Contains(rest, "://") {
		rest = Text(rest) // shorter than raw: the recursion ends
	}
	return raw[:start] + authority + rest
}

// isScheme says whether s is a URL scheme: a letter, then letters, digits,
// '+', '-' or '.'.
func isScheme(s string) bool {
	if s == "" || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for i := range len(s) {
		if !isSchemeByte(s[i]) {
			return false
		}
	}
	return true
}

// maskTail masks the secret values in tail, the "?query#fragment" end of a
// URL (either part may be missing).
func maskTail(tail string) string {
	if tail == "" {
		return ""
	}
	query, fragment, hasFragment := tail, "", false
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		query, fragment, hasFragment = tail[:i], tail[i+1:], true
	}
	out := maskPairs(query)
	if hasFragment {
		out += "#" + maskPairs(fragment)
	}
	return out
}

// maskPairs masks the secret values in s, "name=value" pairs joined by '&'
// or ';' (a leading '?' is kept).
func maskPairs(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		end := strings.IndexAny(s, "&;")
		pair, sep := s, ""
		if end >= 0 {
			pair, sep, s = s[:end], s[end:end+1], s[end+1:]
		} else {
			s = ""
		}
		lead := ""
		if strings.HasPrefix(pair, "?") {
			lead, pair = "?", pair[1:]
		}
		b.WriteString(lead)
		name, _, ok := strings.Cut(pair, "=")
		if ok && isSecretParam(name) {
			pair = pair[:strings.IndexByte(pair, '=')+1] + Mask
		}
		b.WriteString(pair)
		b.WriteString(sep)
	}
	return b.String()
}

// Text returns s, free text such as an error or a reason, with every URL in
// it (a scheme, "://", and what follows up to a space, a quote or an angle
// bracket) redacted as URL does. Punctuation that ends a sentence (".,:;!?)]}")
// right after a URL is taken to be the text's, not the URL's.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !isURLEnd(s[end]) {
			end++
		}
		for end > i+3 && strings.IndexByte(".,:;!?)]}", s[end-1]) >= 0 {
			end--
		}
		b.WriteString(s[:start])
		b.WriteString(URL(s[start:end]))
		s = s[end:]
	}
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isURLEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == 0x7f
}
