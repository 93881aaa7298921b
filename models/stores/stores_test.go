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
