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
