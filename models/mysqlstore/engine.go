package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Servers that speak MySQL's protocol but break what the service relies on
// are refused when the database is opened (docs/deployment.md, "Choosing a
// database", lists the engines and why):
//
//   - TiDB parses FOR UPDATE SKIP LOCKED but takes no lock (pingcap/tidb
//     #18207, #69720): two instances would claim the same rows and start
//     each attempt twice. It lacks JSON_TABLE too, which every batch's
//     save uses.
//   - Vitess (vtgate) lacks JSON_TABLE (vitessio/vitess #5410).
//
// They are told apart by @@version and @@version_comment, case
// insensitively: TiDB's version reads like "8.0.11-TiDB-v7.5.0" and its
// comment "TiDB Server ..."; vtgate answers with its own version, ending in
// "-Vitess" (older releases: "5.7.9-vitess-10.0.0"), whatever the MySQL
// behind it (a vtgate told to announce a version without "Vitess" is not
// recognized: it then fails at its first save instead). Anything else
// (MySQL, MariaDB, Percona, managed services) is accepted and named from
// the same strings.

// engineVersionQuery reads what classifyEngine needs, in one round trip.
const engineVersionQuery = "SELECT @@version, @@version_comment"

// classifyEngine names the server from its @@version and
// @@version_comment, and says why it cannot run the service (nil when
// nothing known stands against it).
func classifyEngine(version, comment string) (name string, refused error) {
	v, c := strings.ToLower(version), strings.ToLower(comment)
	switch {
	case strings.Contains(v, "tidb") || strings.Contains(c, "tidb"):
		return "TiDB", fmt.Errorf("the database is TiDB (version %q), which refresher cannot use: TiDB accepts FOR UPDATE SKIP LOCKED but takes no lock (pingcap/tidb #18207, #69720), so two instances would claim the same rows and start each attempt twice, and it lacks JSON_TABLE, which every batch's save uses; put these kinds on MySQL 8.0.1+, MariaDB 10.6+ or PostgreSQL (kinds[].database)", version)
	case strings.Contains(v, "vitess") || strings.Contains(c, "vitess"):
		return "Vitess", fmt.Errorf("the database is Vitess (version %q), which refresher cannot use: vtgate lacks JSON_TABLE (vitessio/vitess #5410), which every batch's save uses; point the kind at a MySQL 8.0.1+ or MariaDB 10.6+ server directly, or at PostgreSQL (kinds[].database)", version)
	case strings.Contains(v, "mariadb") || strings.Contains(c, "mariadb"):
		return "MariaDB", nil
	}
	return "MySQL", nil
}

// checkEngine refuses a server known to break the service's guarantees.
func checkEngine(ctx context.Context, db *sql.DB) error {
	_, refused, err := engine(ctx, db)
	if err != nil {
		return err
	}
	return refused
}

// engine names the server db talks to ("MySQL", "MariaDB", "TiDB" or
// "Vitess") and says why it is refused, if it is (see classifyEngine).
func engine(ctx context.Context, db *sql.DB) (name string, refused, err error) {
	var version, comment sql.NullString
	if err := db.QueryRowContext(ctx, engineVersionQuery).Scan(&version, &comment); err != nil {
		return "", nil, fmt.Errorf("read the server's version (%s): %w", engineVersionQuery, err)
	}
	name, refused = classifyEngine(version.String, comment.String)
	return name, refused, nil
}
