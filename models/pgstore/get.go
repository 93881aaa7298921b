package pgstore

import (
	"context"
	"fmt"

	"github.com/refresher/refresher/models"
)

// Get reads the row with key, with its payload, without locking: the last
// committed state; see models.Inspector. ok is false when no row has that
// key, also when the key is no value of the key column (text for an integer
// key).
func (s *Store) Get(ctx context.Context, t models.Table, key string) (row models.Row, ok bool, err error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return row, false, err
	}
	if !q.keyType.valid(key) {
		return row, false, nil
	}
	rows, err := queryRows(ctx, s.pool, q, q.selectFrom+" WHERE "+q.keyType.match(q.key, "$1"), []any{[]string{key}}, 1, true)
	if err != nil {
		return row, false, fmt.Errorf("read row %q of %s: %w", key, q.table, withSchemaHint(err))
	}
	if len(rows) == 0 {
		return row, false, nil
	}
	return rows[0], true, nil
}
