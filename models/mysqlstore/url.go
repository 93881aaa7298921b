package mysqlstore

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/internal/redact"
)

// DSN turns a mysql:// URL ("mysql://user:pass@host:3306/app?tls=true")
// into a go-sql-driver DSN; anything else is returned as it is, so the
// driver's own DSN format ("user:pass@tcp(host:3306)/app") keeps working.
// The port defaults to 3306; query parameters are passed on as DSN
// parameters. The error never shows the password.
func DSN(raw string) (string, error) {
	if !strings.HasPrefix(raw, "mysql://") {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", redact.Error(err, raw))
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if q := u.Query(); len(q) > 0 {
		cfg.Params = map[string]string{}
		for k, v := range q {
			cfg.Params[k] = v[len(v)-1]
		}
		// FormatDSN writes known parameters from their fields; parse them
		// back through the driver so that e.g. tls and timeout take effect.
		parsed, err := mysql.ParseDSN(cfg.FormatDSN())
		if err != nil {
			return "", fmt.Errorf("database URL %s: %w", redact.String(raw), redact.Error(err, raw))
		}
		cfg = parsed
	}
	return cfg.FormatDSN(), nil
}
