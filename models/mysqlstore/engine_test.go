package mysqlstore

import (
	"context"
	"strings"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestClassifyEngine: TiDB and Vitess are refused with the reason and the
// way out, from the @@version and @@version_comment they answer; MySQL and
// MariaDB pass.
func TestClassifyEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version, comment, name string
		refused                []string // in the message; none: accepted
	}{
		{"8.0.36", "MySQL Community Server - GPL", "MySQL", nil},
		{"8.4.2-2", "Percona Server (GPL), Release 2, Revision 1", "MySQL", nil},
		{"10.11.6-MariaDB-0+deb12u1", "Debian 12", "MariaDB", nil},
		{"5.5.5-10.6.18-MariaDB", "mariadb.org binary distribution", "MariaDB", nil},
		{"8.0.11-TiDB-v7.5.1", "TiDB Server (Apache License 2.0) Community Edition, MySQL 8.0 compatible", "TiDB",
			[]string{"TiDB", "takes no lock", "#18207", "#69720", "JSON_TABLE", "kinds[].database"}},
		{"5.7.25-tidb-v6.5.0", "", "TiDB", []string{"SKIP LOCKED"}},
		{"8.0.30-Vitess", "Version: 19.0.4 (Git revision 7a5d1a9 branch 'HEAD')", "Vitess",
			[]string{"Vitess", "JSON_TABLE", "#5410"}},
		{"5.7.9-vitess-10.0.0-SNAPSHOT", "", "Vitess", []string{"JSON_TABLE"}},
		{"8.0.36", "Vitess", "Vitess", []string{"JSON_TABLE"}},
	} {
		name, refused := classifyEngine(tc.version, tc.comment)
		if name != tc.name {
			t.Errorf("%q, %q: named %s, want %s", tc.version, tc.comment, name, tc.name)
		}
		if (refused != nil) != (tc.refused != nil) {
			t.Errorf("%q, %q: refused %v, want refused: %v", tc.version, tc.comment, refused, tc.refused != nil)
			continue
		}
		for _, want := range tc.refused {
			if !strings.Contains(refused.Error(), want) {
				t.Errorf("%q: the refusal %q does not say %q", tc.version, refused, want)
			}
		}
	}
}

// TestOpenLocalMariaDB: the local server passes Open's check and is named
// from its real version strings.
func TestOpenLocalMariaDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, testenv.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name, refused, err := engine(ctx, db)
	if err != nil || refused != nil || (name != "MariaDB" && name != "MySQL") {
		t.Fatalf("engine: %q, %v, %v; want MariaDB or MySQL, not refused", name, refused, err)
	}
	t.Logf("the local server is %s", name)
}
