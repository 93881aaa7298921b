package refresher

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

func TestRefusedByDatabase(t *testing.T) {
	t.Parallel()
	state := func(s string) (b [5]byte) { copy(b[:], s); return b }
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"illegal mix of collations", &mysql.MySQLError{Number: 1270, SQLState: state("HY000")}, true},
		{"wrapped", fmt.Errorf("lock rows: %w", &mysql.MySQLError{Number: 1366, SQLState: state("22007")}), true},
		{"data too long", &mysql.MySQLError{Number: 1406, SQLState: state("22001")}, true},
		{"duplicate key", &mysql.MySQLError{Number: 1062, SQLState: state("23000")}, true},
		{"incorrect string value", &mysql.MySQLError{Number: 1366, SQLState: state("HY000")}, true},
		{"invalid JSON (MariaDB)", &mysql.MySQLError{Number: 4038, SQLState: state("HY000")}, true},
		{"missing table", &mysql.MySQLError{Number: 1146, SQLState: state("42S02")}, false},
		{"missing column", &mysql.MySQLError{Number: 1054, SQLState: state("42S22")}, false},
		{"no privilege", &mysql.MySQLError{Number: 1142, SQLState: state("42000")}, false},
		{"read only", &mysql.MySQLError{Number: 1290, SQLState: state("HY000")}, false},
		{"table full", &mysql.MySQLError{Number: 1114, SQLState: state("HY000")}, false},
		{"deadlock", &mysql.MySQLError{Number: 1213, SQLState: state("40001")}, false},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, SQLState: state("HY000")}, false},
		{"shutdown", &mysql.MySQLError{Number: 1927, SQLState: state("70100")}, false},
		{"connection class", &mysql.MySQLError{Number: 2000, SQLState: state("08S01")}, false},
		{"bad connection", driver.ErrBadConn, false},
		{"other", errors.New("dial tcp: connection refused"), false},
		{"test crash", fmt.Errorf("%w: %w", errCrashed, &mysql.MySQLError{Number: 1270}), false},
	} {
		require.Equal(t, tt.want, refusedByDatabase(tt.err), tt.name)
	}
}
