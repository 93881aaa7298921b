package models

import (
	"fmt"
	"slices"
	"strings"
)

// TableNames are a Table's names quoted for one database.
type TableNames struct {
	Table, Key string
	Payload    []string
}

// QuoteNames quotes t's names with quote, a driver's identifier quoting;
// the error says which name the database cannot hold.
func QuoteNames(t Table, quote func(string) (string, error)) (TableNames, error) {
	var n TableNames
	var err error
	if n.Table, err = quote(t.Name); err != nil {
		return n, fmt.Errorf("table name: %w", err)
	}
	if n.Key, err = quote(t.Key); err != nil {
		return n, fmt.Errorf("key column of table %s: %w", n.Table, err)
	}
	for _, p := range t.Payload {
		qp, err := quote(p)
		if err != nil {
			return n, fmt.Errorf("payload column of table %s: %w", n.Table, err)
		}
		n.Payload = append(n.Payload, qp)
	}
	return n, nil
}

// Selects returns the SELECTs a driver reads rows of n's table with:
// key (the key column as selected, n.Key or an expression of it),
// refresh_rrule and the state columns in StateColumns' order (quoted by
// quote), then in from and claim only the payload columns, then id unless
// it is "" (the column rows are written back by, as selected). claim is
// from with ClaimRest read of running rows only (ClaimColumn): ClaimDue's,
// whose rows the driver passes to MarkClaimed.
func (n TableNames) Selects(key, id string, quote func(string) (string, error)) (from, state, claim string) {
	rrule, _ := quote(ColRRule)
	uid, _ := quote(ColAttemptUID)
	cols := []string{key, rrule}
	lean := []string{key, rrule}
	for c, col := range StateColumns {
		q, _ := quote(col.Name)
		cols = append(cols, q)
		lean = append(lean, ClaimColumn(c, uid, q))
	}
	var ids []string
	if id != "" {
		ids = []string{id}
	}
	return "SELECT " + strings.Join(slices.Concat(cols, n.Payload, ids), ", ") + " FROM " + n.Table,
		"SELECT " + strings.Join(slices.Concat(cols, ids), ", ") + " FROM " + n.Table,
		"SELECT " + strings.Join(slices.Concat(lean, n.Payload, ids), ", ") + " FROM " + n.Table
}
