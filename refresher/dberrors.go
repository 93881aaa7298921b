package refresher

import (
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// refusedByDatabase reports whether err is the database refusing a statement
// for what it holds (say, a value the key column's character set cannot
// compare), as opposed to a passing condition or an outage, after which the
// same batch is simply tried again later:
//
//   - a lost or refused connection (not a *mysql.MySQLError at all, or SQL
//     state class 08),
//   - 1205 lock wait timeout, 1213 deadlock, 1040 too many connections,
//     1053/1927 server shutdown, 1969/3024 statement time limit.
func refusedByDatabase(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || errors.Is(err, errCrashed) {
		return false
	}
	if strings.HasPrefix(string(me.SQLState[:]), "08") {
		return false
	}
	switch me.Number {
	case 1205, 1213, 1040, 1053, 1927, 1969, 3024:
		return false
	}
	return true
}
