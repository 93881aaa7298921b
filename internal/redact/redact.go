// Package redact removes passwords from connection strings, and from errors
// that quote them, before they are printed: a Redis URL
// (redis://user:pass@host:6379/0), a database URL (mysql://, postgres://)
// or a go-sql-driver DSN (user:pass@tcp(host:3306)/app), in the user
// information and in the query (?password=..., and the other parameters of
// secretParams). It works on the text, so that malformed strings, which the
// drivers refuse and quote in their errors, are redacted too.
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces a password.
const Mask = "xxxxx"

// Password returns the password in conn, or "" when there is none: the text
// between the first ':' and the last '@' of the user information, which ends
// at the last '@' (before the last '/' for a DSN without a scheme, whose
// database name follows it). The query's secret parameters are masked
// first, so that an '@' in their values does not count.
func Password(conn string) string {
	conn = maskQuery(conn)
	start, end := userinfo(conn)
	if start < 0 {
		return ""
	}
	user := conn[start:end]
	_, pass, ok := strings.Cut(user, ":")
	if !ok {
		return ""
	}
	return pass
}

// String returns conn with its password and the values of its secret query
// parameters replaced by Mask.
func String(conn string) string {
	conn = maskQuery(conn)
	pass := Password(conn)
	if pass == "" {
		return conn
	}
	start, end := userinfo(conn)
	user := conn[start:end]
	name, _, _ := strings.Cut(user, ":")
	return conn[:start] + name + ":" + Mask + conn[end:]
}

// userinfo returns where the user information of conn starts and ends
// (before the '@'), or -1, -1.
func userinfo(conn string) (start, end int) {
	rest := conn
	start = 0
	if i := strings.Index(conn, "://"); i >= 0 {
		start = i + 3
		rest = conn[start:]
	} else if slash := strings.LastIndex(rest, "/"); slash >= 0 {
		rest = rest[:slash] // go-sql-driver: the '@' comes before the last '/'
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return -1, -1
	}
	return start, start + at
}

// Error returns err with every occurrence of the password of conn and of
// the values of its secret query parameters (as written, and URL-unescaped)
// replaced by Mask in its text; errors.Is and errors.As still see err. nil
// stays nil.
func Error(err error, conn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	secrets := querySecrets(conn)
	if pass := Password(conn); pass != "" {
		secrets = append(secrets, pass)
	}
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, Mask)
		if plain, perr := url.QueryUnescape(s); perr == nil && plain != s {
			msg = strings.ReplaceAll(msg, plain, Mask)
		}
		if plain, perr := url.PathUnescape(s); perr == nil && plain != s {
			msg = strings.ReplaceAll(msg, plain, Mask)
		}
	}
	if msg == err.Error() {
		return err
	}
	return &redacted{err: err, msg: msg}
}

type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
