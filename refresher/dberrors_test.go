package refresher

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	state := func(s string) (b [5]byte) { copy(b[:], s); return b }
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock", &mysql.MySQLError{Number: 1213, SQLState: state("40001")}, true},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, SQLState: state("HY000")}, true},
		{"shutdown", &mysql.MySQLError{Number: 1927, SQLState: state("70100")}, true},
		{"connection class", &mysql.MySQLError{Number: 2000, SQLState: state("08S01")}, true},
		{"bad connection", driver.ErrBadConn, true},
		{"other", errors.New("dial tcp: connection refused"), true},
		{"test crash", fmt.Errorf("%w: %w", errCrashed, &mysql.MySQLError{Number: 1270}), true},
		{"illegal mix of collations", &mysql.MySQLError{Number: 1270, SQLState: state("HY000")}, false},
		{"wrapped", fmt.Errorf("lock rows: %w", &mysql.MySQLError{Number: 1366, SQLState: state("22007")}), false},
		{"trigger SIGNAL", &mysql.MySQLError{Number: 1644, SQLState: state("45000")}, false},
		{"missing table", &mysql.MySQLError{Number: 1146, SQLState: state("42S02")}, false},
		{"no privilege", &mysql.MySQLError{Number: 1142, SQLState: state("42000")}, false},
		{"read only", &mysql.MySQLError{Number: 1290, SQLState: state("HY000")}, false},
	} {
		require.Equal(t, tt.want, transient(tt.err), tt.name)
	}
}
