package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want, pass string }{
		{"redis://:s3cret@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0", "s3cret"},
		{"redis://user:s3cret@host:6379/0", "redis://user:xxxxx@host:6379/0", "s3cret"},
		{"rediss://user:p@ss/w0rd@host:6379/0", "rediss://user:xxxxx@host:6379/0", "p@ss/w0rd"},
		{"redis://host:6379/0", "redis://host:6379/0", ""},
		{"redis://user@host:6379/0", "redis://user@host:6379/0", ""},
		{"mysql://app:s3cret@db:3306/app", "mysql://app:xxxxx@db:3306/app", "s3cret"},
		{"postgres://app:s3cret@db:5432/app?sslmode=disable", "postgres://app:xxxxx@db:5432/app?sslmode=disable", "s3cret"},
		{"root:s3cret@tcp(127.0.0.1:3306)/app?parseTime=true", "root:xxxxx@tcp(127.0.0.1:3306)/app?parseTime=true", "s3cret"},
		{"root:p@ss@tcp(127.0.0.1:3306)/app", "root:xxxxx@tcp(127.0.0.1:3306)/app", "p@ss"},
		{"root:@tcp(127.0.0.1:3306)/app", "root:@tcp(127.0.0.1:3306)/app", ""},
		{"/app", "/app", ""},
		// Passwords in the query.
		{"postgres://app@db:5432/app?password=s3cret&sslmode=disable", "postgres://app@db:5432/app?password=xxxxx&sslmode=disable", ""},
		{"mysql://app@db:3306/app?parseTime=true&PASSWORD=s3cret", "mysql://app@db:3306/app?parseTime=true&PASSWORD=xxxxx", ""},
		{"redis://db:6379/0?password=p@ss/w0rd", "redis://db:6379/0?password=xxxxx", ""},
		{"redis://u:pw@db:6379/0?token=t0k&sslpassword=x&db=1#frag", "redis://u:xxxxx@db:6379/0?token=xxxxx&sslpassword=xxxxx&db=1#frag", "pw"},
		{"app@tcp(db:3306)/app?password=s3cret", "app@tcp(db:3306)/app?password=xxxxx", ""},
		{"postgres://db/app?password=&sslmode=disable", "postgres://db/app?password=&sslmode=disable", ""},
		{"", "", ""},
	} {
		require.Equal(t, tt.want, String(tt.in), tt.in)
		require.Equal(t, tt.pass, Password(tt.in), tt.in)
	}
}

// The drivers quote a malformed string in their errors; Error takes the
// password out of the text and keeps the chain.
func TestErrorOfMalformed(t *testing.T) {
	t.Parallel()
	for _, conn := range []string{
		"redis://:s3cret@127.0.0.1:63z9/0",
		"redis://:s3cret@127.0.0.1:6379/zero",
		"redis://u:s3cret@[::1:6379/0",
		"redis://:s3cret@127.0.0.1:6379/0?dial_timeout=soon",
	} {
		_, err := redis.ParseURL(conn)
		require.Error(t, err, conn)
		wrapped := fmt.Errorf("redis URL %q: %w", String(conn), err)
		red := Error(wrapped, conn)
		require.NotContains(t, red.Error(), "s3cret", conn)
		require.True(t, errors.Is(red, err))
	}
	_, err := url.Parse("postgres://app:s3cret@db:54x2/app")
	require.Contains(t, err.Error(), "s3cret")
	require.NotContains(t, Error(err, "postgres://app:s3cret@db:54x2/app").Error(), "s3cret")
	dsn := "root:s3cret@tcp(127.0.0.1:3306)/app?parseTime=maybe"
	_, err = mysql.ParseDSN(dsn)
	require.Error(t, err)
	require.False(t, strings.Contains(Error(err, dsn).Error(), "s3cret"))
	require.NoError(t, Error(nil, dsn))

	// Query passwords, as written and unescaped.
	for _, conn := range []string{
		"redis://127.0.0.1:6379/zero?password=s3cret",
		"redis://127.0.0.1:6379/0?password=s%33cret&dial_timeout=soon",
		"postgres://app@db:54x2/app?password=s3cret",
	} {
		err := fmt.Errorf("bad %s (password s3cret)", conn)
		require.NotContains(t, Error(err, conn).Error(), "s3cret", conn)
		require.NotContains(t, String(conn), "s3cret", conn)
		require.NotContains(t, String(conn), "s%33cret", conn)
	}
}
