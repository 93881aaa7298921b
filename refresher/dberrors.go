package refresher

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// transient reports whether err is a passing condition of the database
// (after which the same batch is simply tried again later) rather than the
// database refusing a statement:
//
//   - a lost or refused connection (not a *mysql.MySQLError at all, or SQL
//     state class 08),
//   - 1205 lock wait timeout, 1213 deadlock, 1040 too many connections,
//     1053/1927 server shutdown, 1969/3024 statement time limit,
//   - a poller stopped by a test hook.
//
// A refusal may come from one result (a uid the key column's character set
// cannot compare, a value an application trigger rejects) or from the
// database itself (a missing table or column or privilege, a read-only
// server); the poller tells them apart by applying the batch one result at
// a time (see poller.applyEach).
func transient(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || errors.Is(err, errCrashed) {
		return true
	}
	if strings.HasPrefix(string(me.SQLState[:]), "08") {
		return true
	}
	switch me.Number {
	case 1205, 1213, 1040, 1053, 1927, 1969, 3024:
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
