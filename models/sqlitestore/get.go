package sqlitestore

import (
	"context"
	"fmt"

	"github.com/refresher/refresher/models"
)

// Get reads the row with key, with its payload, without locking: the last
// committed state; see models.Inspector. ok is false when no row has that
// key.
func (s *Store) Get(ctx context.Context, t models.Table, key string) (row models.Row, ok bool, err error) {
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return row, false, err
	}
	rows, err := query(ctx, s.db, q, q.selectFrom+" WHERE "+q.key+" = ?", []any{key}, 1, true)
	if err != nil {
		return row, false, withSchemaHint(fmt.Errorf("read row %q of %s: %w", key, q.table, err))
	}
	if len(rows) == 0 {
		return row, false, nil
	}
	return rows[0], true, nil
}
