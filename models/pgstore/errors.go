package pgstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/refresher/refresher/models"
)

// Classify says what err means for the batch that got it (models.Store), by
// the SQLSTATE of a *pgconn.PgError:
//
//   - Transient: not a PgError at all (a lost or refused connection, a
//     cancelled context), class 08 (connection exception), 40001
//     serialization failure, 40P01 deadlock, 57P01/57P02/57P03 server
//     shutting down or starting, 53300 too many connections, 55P03 lock not
//     available (lock_timeout), 57014 statement cancelled
//     (statement_timeout), 0A000 "cached plan must not change result type"
//     (a column changed type under a prepared statement; pgx prepares it
//     again on the next try);
//   - ValueRefused: class 22 (data exception, among them 22P05 and 22021,
//     a character the encoding cannot hold), 23502 NULL in a NOT NULL
//     column, 23514 CHECK constraint, P0001 an application trigger's RAISE
//     EXCEPTION;
//   - TableRefused: everything else, such as 42P01 missing table, 42703
//     missing column, 42501 missing privilege, 25006 read-only transaction
//     (a standby), and the store's own findings about the table (a
//     missing table or key column). Results then wait in Redis: an unknown
//     refusal never destroys a message.
func (s *Store) Classify(err error) models.ErrorClass { return classify(err) }

func classify(err error) models.ErrorClass {
	var te *tableError
	if errors.As(err, &te) {
		return models.TableRefused
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return models.Transient
	}
	code := pe.Code
	switch {
	case strings.HasPrefix(code, "08"):
		return models.Transient
	case strings.HasPrefix(code, "22"):
		return models.ValueRefused
	}
	switch code {
	case "40001", "40P01", "57P01", "57P02", "57P03", "53300", "55P03", "57014":
		return models.Transient
	case "0A000":
		if strings.Contains(pe.Message, "cached plan") {
			return models.Transient
		}
	case "23502", "23514", "P0001":
		return models.ValueRefused
	}
	return models.TableRefused
}

// tableError is the store's own finding that a kind's table cannot be used
// as configured (missing table, key column of no usable type); it
// classifies as TableRefused.
type tableError struct{ msg string }

func (e *tableError) Error() string { return e.msg }

func tableErrorf(format string, args ...any) error {
	return &tableError{msg: fmt.Sprintf(format, args...)}
}

// withSchemaHint adds how to fix it to an error that says the kind's table
// or one of its columns is missing (42P01, 42703), or that the service may
// not write it (42501, 25006): the loops keep retrying until someone does.
func withSchemaHint(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "42P01", "42703":
		return fmt.Errorf("%w (create the table or fix `table:`/`key:`/`payload:` of the kind in the config, then run `refresher migrate`; results wait in Redis meanwhile)", err)
	case "42501":
		return fmt.Errorf("%w (grant the service's database user SELECT and UPDATE on the table; results wait in Redis meanwhile)", err)
	case "25006":
		return fmt.Errorf("%w (the server is a read-only standby: point `database:` at the primary; results wait in Redis meanwhile)", err)
	}
	return err
}
