package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPriorityFilter pins the rows each range holds, as every driver's
// claim, backlog count and urgent probe ask for them.
func TestPriorityFilter(t *testing.T) {
	q := func(c string) string { return "`" + c + "`" }
	for _, tc := range []struct {
		p     Priority
		claim bool
		want  string
		args  []any
	}{
		{Priority{Level: 0, Source: PriorityOnce}, true, "`refresh_priority_once` = ? AND ", []any{0}},
		{Priority{Level: 5, Source: PriorityRow}, true, "`refresh_priority` = ? AND `refresh_priority_once` IS NULL AND ", []any{5}},
		{Priority{Level: 10, Source: PriorityKind}, true, "`refresh_priority` IS NULL AND `refresh_priority_once` IS NULL AND ", nil},
		{Priority{Level: 0, Source: PriorityOnce}, false, "`refresh_priority_once` = ? AND ", []any{0}},
		{Priority{Level: 5, Source: PriorityRow}, false, "`refresh_priority` = ? AND ", []any{5}},
		{Priority{Level: 10, Source: PriorityKind}, false, "`refresh_priority` IS NULL AND ", nil},
	} {
		got, args := tc.p.Filter(q, "?", tc.claim)
		require.Equal(t, tc.want, got, "%+v claim=%v", tc.p, tc.claim)
		require.Equal(t, tc.args, args, "%+v claim=%v", tc.p, tc.claim)
	}
}
