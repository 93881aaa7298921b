package refresher

import (
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// refusedByDatabase reports whether err is the database refusing a statement
// for a value it was given (say, a uid the key column's character set cannot
// compare), so that the one result carrying that value belongs in the dead
// letters. Anything else is a condition of the database, not of the result,
// and the same batch is tried again later: a lost connection, a deadlock or
// lock wait timeout, a shutdown, and also a missing table or column, a
// missing privilege, a read-only or full server. Dead-lettering every result
// while someone fixes the schema would lose them all.
//
// Refused: SQL state class 22 (data exception: out of range, too long,
// incorrect value) and 23 (integrity constraint), and the errors MySQL and
// MariaDB report with the generic state HY000 for a value: illegal mix of
// collations (1267, 1270, 1271), incorrect string value (1366), invalid
// character string (1300), cannot convert character (1918 MariaDB, 3988
// MySQL), and invalid JSON (3140-3146 MySQL, 4036-4048 MariaDB).
func refusedByDatabase(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || errors.Is(err, errCrashed) {
		return false
	}
	switch string(me.SQLState[:2]) {
	case "22", "23":
		return true
	}
	switch n := me.Number; {
	case n == 1267, n == 1270, n == 1271, n == 1300, n == 1366, n == 1918, n == 3988:
		return true
	case n >= 3140 && n <= 3146, n >= 4036 && n <= 4048:
		return true
	}
	return false
}

// withSchemaHint adds how to fix it to an error that says the kind's table
// or one of its columns is missing (1146, 1054): the loops keep retrying
// until someone does.
func withSchemaHint(err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return err
	}
	switch me.Number {
	case 1146, 1054:
		return fmt.Errorf("%w (create the table or fix `table:`/`key:`/`payload:` of the kind in the config, then run `refresher migrate`; results wait in Redis meanwhile)", err)
	}
	return err
}
