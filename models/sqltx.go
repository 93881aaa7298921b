package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// InSQLTx runs fn in a transaction of db begun with opts, for the drivers
// on database/sql. It commits when fn returns nil; otherwise, or when fn
// panics, it rolls back and returns fn's error (joined with the rollback's,
// should that fail too).
func InSQLTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		done = true
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("roll back: %w", rbErr))
		}
		return err
	}
	done = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// RowsAffected is the count of an Exec's result, for the drivers on
// database/sql: RowsAffected(db.ExecContext(...)).
func RowsAffected(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// SaveRestoringOnce is the database/sql drivers' SaveIfAttempt of one batch
// b (its UPDATE: query, args) that holds rows claimed by their one-shot
// priority, which the claim cleared (RestoresOnce): in one transaction it
// first runs restore (the driver's UPDATE of refresh_priority_once with
// the arguments level, key, guard, guarded by the attempt UID and the
// column being NULL: a newer trigger wins) for each such row, then the
// batch's UPDATE, which changes the attempt UID restore asks for. One
// statement per such row: only triggered rows of a failed push take this
// path. guard turns an attempt UID guard into its argument (nil for ""). It
// returns the rows the batch's UPDATE wrote.
func SaveRestoringOnce(ctx context.Context, db *sql.DB, b SaveGroup, restore string, guard func(string) any, query string, args []any) (int, error) {
	n := 0
	err := InSQLTx(ctx, db, nil, func(tx *sql.Tx) error {
		for i, r := range b.Rows {
			if r.Priority.Source != PriorityOnce {
				continue
			}
			if _, err := tx.ExecContext(ctx, restore, r.Priority.Level, r.Key, guard(b.Guard[i])); err != nil {
				return err
			}
		}
		var err error
		n, err = RowsAffected(tx.ExecContext(ctx, query, args...))
		return err
	})
	return n, err
}
