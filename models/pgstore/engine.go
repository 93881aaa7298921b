package pgstore

import (
	"context"
	"fmt"
	"strings"
)

// Servers that speak PostgreSQL's protocol are told apart by version()
// (docs/deployment.md, "Choosing a database", lists the engines):
// CockroachDB's reads "CockroachDB CCL v23.1.11 (...)", YugabyteDB's
// "PostgreSQL 11.2-YB-2.18.0.0-b0 on ...". Both support FOR UPDATE SKIP
// LOCKED, which is what the service's claims rely on: CockroachDB since
// cockroachdb/cockroach #85720, YugabyteDB for its isolation levels
// (yugabyte-db #9929; the store's transactions are READ COMMITTED). No
// engine of this protocol is known to break the service's guarantees, so
// Open refuses none (unlike mysqlstore's, which refuses TiDB and Vitess);
// one found later would be refused from classifyEngine's answer there.

// classifyEngine names the server from its version().
func classifyEngine(version string) string {
	switch {
	case strings.Contains(version, "CockroachDB"):
		return "CockroachDB"
	case strings.Contains(version, "-YB-"):
		return "YugabyteDB"
	}
	return "PostgreSQL"
}

// Engine names the server the store talks to: "PostgreSQL", "CockroachDB"
// or "YugabyteDB".
func (s *Store) Engine(ctx context.Context) (string, error) {
	var version string
	if err := s.pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return "", fmt.Errorf("read the server's version (SELECT version()): %w", err)
	}
	return classifyEngine(version), nil
}
