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
