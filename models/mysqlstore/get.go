package mysqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/refresher/refresher/models"
)

// Get reads the row with key, with its payload, without locking: the last
// committed state, in a read-only transaction; see models.Inspector. ok is
// false when no row has that key, and when the key column cannot hold key
// (see keyFilter): "7abc" does not find row 7 of an integer key.
func (s *Store) Get(ctx context.Context, t models.Table, key string) (row models.Row, ok bool, err error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return row, false, err
	}
	var rows []models.Row
	err = s.readOnly(ctx, func(tx *Tx) error {
		valid, err := keyFilter(ctx, tx.tx, q.meta.cols[strings.ToLower(q.keyName)], []string{key})
		if err != nil || !valid(key) {
			return err
		}
		rows, err = tx.query(ctx, q, q.selectFrom+" WHERE "+q.key+" = ?", []any{key}, 1, true)
		return err
	})
	if err != nil {
		return row, false, fmt.Errorf("read row %q of %s: %w", key, q.table, withSchemaHint(err))
	}
	if len(rows) == 0 {
		return row, false, nil
	}
	return rows[0], true, nil
}
