package mysqlstore

import (
	"strings"
	"testing"
)

func TestDSN(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"root:@tcp(127.0.0.1:3306)/app", "root:@tcp(127.0.0.1:3306)/app"},
		{"mysql://root@127.0.0.1/app", "root@tcp(127.0.0.1:3306)/app"},
		{"mysql://u:p%40ss@db.example:3307/app?timeout=2s", "u:p@ss@tcp(db.example:3307)/app?timeout=2s"},
		{"mysql://u@[::1]:3306/app", "u@tcp([::1]:3306)/app"},
	} {
		got, err := DSN(tt.in)
		must(t, err)
		eq(t, got, tt.want, tt.in)
	}
	for _, raw := range []string{
		"mysql://u:secret@host:notaport/app",
		"mysql://u@host:notaport/app?password=secret",
		"mysql://u@host/app?password=secret&parseTime=maybe",
	} {
		_, err := DSN(raw)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("DSN(%q): want an error without the password, got %v", raw, err)
		}
	}
}
