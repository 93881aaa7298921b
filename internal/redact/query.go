package redact

import (
	"net/url"
	"strings"
)

// secretParams are the query (and, in URL, fragment) parameters whose
// values are masked, compared case-insensitively: pgx and go-sql-driver take
// a password from the query (postgres://app@db/app?password=...), and the
// others commonly carry a credential in a URL a user pastes. A name ending
// in "password" (pgx's sslpassword) counts too. Both the connection strings
// (String, Error) and the input URLs (URL, Text) use this one list.
var secretParams = map[string]bool{
	"password": true, "pass": true, "passwd": true, "pwd": true,
	"token": true, "access_token": true, "refresh_token": true, "id_token": true,
	"key": true, "api_key": true, "apikey": true, "api-key": true,
	"secret": true, "client_secret": true,
	"signature": true, "sig": true,
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true,
	"x-goog-signature": true, "x-goog-credential": true,
}

func isSecretParam(name string) bool {
	name = strings.ToLower(name)
	if plain, err := url.QueryUnescape(name); err == nil {
		name = plain
	}
	return secretParams[name] || strings.HasSuffix(name, "password")
}

// params returns where the query of conn starts (after the '?') and its
// "name=value" pairs as written, or -1 and nil when it has none.
func params(conn string) (start int, pairs []string) {
	q := strings.IndexByte(conn, '?')
	if q < 0 {
		return -1, nil
	}
	query, _, _ := strings.Cut(conn[q+1:], "#")
	return q + 1, strings.Split(query, "&")
}

// querySecrets returns the non-empty values of conn's secret query
// parameters, as written.
func querySecrets(conn string) []string {
	_, pairs := params(conn)
	var out []string
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if ok && value != "" && isSecretParam(name) {
			out = append(out, value)
		}
	}
	return out
}

// maskQuery returns conn with the value of every secret query parameter
// replaced by Mask.
func maskQuery(conn string) string {
	start, pairs := params(conn)
	if start < 0 {
		return conn
	}
	end := start + len(strings.Join(pairs, "&"))
	for i, p := range pairs {
		if name, value, ok := strings.Cut(p, "="); ok && value != "" && isSecretParam(name) {
			pairs[i] = name + "=" + Mask
		}
	}
	return conn[:start] + strings.Join(pairs, "&") + conn[end:]
}
