package stores

import (
	"context"
	"strings"
	"testing"
)

func TestOpenUnknownScheme(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "oracle://u:secret@host/db", Options{})
	if err == nil {
		t.Fatal("no error for an unknown scheme")
	}
	for _, want := range []string{`unknown scheme "oracle"`, "mysql://", "postgres://", "sqlite://"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Open(ctx, "sqlite://"+dir+"/app.db", Options{}); err == nil || !strings.Contains(err.Error(), "the file does not exist") {
		t.Fatalf("a missing file without CreateSQLite: %v", err)
	}
	for _, raw := range []string{"sqlite://" + dir + "/app.db", "sqlite::memory:", "sqlite://:memory:"} {
		s, err := Open(ctx, raw, Options{CreateSQLite: true})
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("%s: ping: %v", raw, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("%s: close: %v", raw, err)
		}
	}
	if _, err := Open(ctx, "sqlite://", Options{}); err == nil || !strings.Contains(err.Error(), "names no file") {
		t.Fatalf("sqlite:// without a path: %v", err)
	}
}

// A password in the query of a database URL (or in its user information)
// never shows in an error, whatever the driver's parser or connection
// says: malformed URLs, bad parameters and refused connections.
func TestOpenHidesQueryPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, raw := range []string{
		"postgres://app@127.0.0.1:54x2/app?password=Q1secretPw",
		"postgres://app@127.0.0.1:5432/app?password=Q1secretPw&connect_timeout=x",
		"postgres://app@127.0.0.1:1/app?sslmode=disable&PASSWORD=Q1secretPw",
		"postgresql://app@127.0.0.1:1/app?sslpassword=Q1secretPw&sslmode=disable",
		"postgres://app@127.0.0.1:1/app?password=Q1%2FsecretPw",
		"mysql://app@127.0.0.1:1/app?password=Q1secretPw&parseTime=maybe",
		"mysql://app@127.0.0.1:1/app?password=Q1secretPw",
		"app@tcp(127.0.0.1:1)/app?password=Q1secretPw&parseTime=maybe",
		"mysql://app:Q1secretPw@127.0.0.1:1/app?parseTime=maybe",
	} {
		_, err := Open(ctx, raw, Options{})
		if err == nil {
			t.Fatalf("%s: no error", raw)
		}
		if strings.Contains(err.Error(), "Q1secretPw") || strings.Contains(err.Error(), "Q1/secretPw") {
			t.Errorf("%s: the error shows the password: %v", raw, err)
		}
	}
}
