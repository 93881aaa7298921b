package mysqlstore

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/models"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	state := func(s string) (b [5]byte) { copy(b[:], s); return b }
	for _, tt := range []struct {
		name string
		err  error
		want models.ErrorClass
	}{
		{"deadlock", &mysql.MySQLError{Number: 1213, SQLState: state("40001")}, models.Transient},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, SQLState: state("HY000")}, models.Transient},
		{"shutdown", &mysql.MySQLError{Number: 1927, SQLState: state("70100")}, models.Transient},
		{"connection class", &mysql.MySQLError{Number: 2000, SQLState: state("08S01")}, models.Transient},
		{"too many connections", &mysql.MySQLError{Number: 1040, SQLState: state("HY000")}, models.Transient},
		{"bad connection", driver.ErrBadConn, models.Transient},
		{"other", errors.New("dial tcp: connection refused"), models.Transient},
		{"illegal mix of collations", &mysql.MySQLError{Number: 1270, SQLState: state("HY000")}, models.ValueRefused},
		{"illegal mix of collations 1271", &mysql.MySQLError{Number: 1271, SQLState: state("HY000")}, models.ValueRefused},
		{"cannot convert character", &mysql.MySQLError{Number: 1977, SQLState: state("HY000")}, models.ValueRefused},
		{"wrapped incorrect string", fmt.Errorf("lock rows: %w", &mysql.MySQLError{Number: 1366, SQLState: state("22007")}), models.ValueRefused},
		{"incorrect string, HY000", &mysql.MySQLError{Number: 1366, SQLState: state("HY000")}, models.ValueRefused},
		{"trigger SIGNAL", &mysql.MySQLError{Number: 1644, SQLState: state("45000")}, models.ValueRefused},
		{"missing table", &mysql.MySQLError{Number: 1146, SQLState: state("42S02")}, models.TableRefused},
		{"missing column", &mysql.MySQLError{Number: 1054, SQLState: state("42S22")}, models.TableRefused},
		{"no privilege", &mysql.MySQLError{Number: 1142, SQLState: state("42000")}, models.TableRefused},
		{"read only", &mysql.MySQLError{Number: 1290, SQLState: state("HY000")}, models.TableRefused},
		{"unknown refusal", &mysql.MySQLError{Number: 9999, SQLState: state("HY000")}, models.TableRefused},
	} {
		if got := classify(tt.err); got != tt.want {
			t.Errorf("%s: classify = %s, want %s", tt.name, got, tt.want)
		}
	}
}
