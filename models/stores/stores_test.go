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
