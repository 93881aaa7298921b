package mysqlstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/models"
)

// Classify says what err means for the batch that got it (models.Store):
//
//   - Transient: not a *mysql.MySQLError at all (a lost or refused
//     connection), SQL state class 08 (connection), 40 (rollback: deadlock)
//     or HY000 with one of 1205 lock wait timeout, 1040 too many
//     connections, 1053/1927 server shutdown, 1969/3024 statement time
//     limit;
//   - ValueRefused: SQL state class 22 (data exception: 1366 incorrect
//     string value, 1406 data too long, 1264 out of range, 1292 incorrect
//     datetime), 1267/1270/1271 illegal mix of collations and 1977 cannot
//     convert (a text a column's character set cannot compare; keys are
//     checked before, see keyFilter, and name no row), 1048 NULL in a NOT NULL
//     column, 1644 and SQL state 45000 (an application trigger's SIGNAL),
//     3819/4025 a CHECK constraint, 3140 invalid JSON;
//   - TableRefused: everything else, such as 1146 missing table, 1054
//     missing column, 1142/1143/1044 missing privilege, 1290/1036/1792
//     read-only server or table. Results then wait in Redis: an unknown
//     refusal never destroys a message.
func (s *Store) Classify(err error) models.ErrorClass { return classify(err) }

func classify(err error) models.ErrorClass {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return models.Transient
	}
	state := string(me.SQLState[:])
	switch {
	case strings.HasPrefix(state, "08"), strings.HasPrefix(state, "40"):
		return models.Transient
	case strings.HasPrefix(state, "22"), state == "45000":
		return models.ValueRefused
	}
	switch me.Number {
	case 1205, 1213, 1040, 1053, 1927, 1969, 3024:
		return models.Transient
	case 1366, 1406, 1264, 1292, 1267, 1270, 1271, 1977, 1048, 1644, 3819, 4025, 3140:
		return models.ValueRefused
	}
	return models.TableRefused
}

// withSchemaHint adds how to fix it to an error that says the kind's table
// or one of its columns is missing (1146, 1054), or that the service may not
// write it (1142, 1143, 1290): the loops keep retrying until someone does.
func withSchemaHint(err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return err
	}
	switch me.Number {
	case 1146, 1054:
		return fmt.Errorf("%w (create the table or fix `table:`/`key:`/`payload:` of the kind in the config, then run `refresher migrate`; results wait in Redis meanwhile)", err)
	case 1142, 1143, 1044:
		return fmt.Errorf("%w (grant the service's database user SELECT and UPDATE on the table; results wait in Redis meanwhile)", err)
	case 1290, 1036, 1792:
		return fmt.Errorf("%w (the server or table is read-only: point `database:` at the primary; results wait in Redis meanwhile)", err)
	}
	return err
}
