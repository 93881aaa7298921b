package sqlitestore

import (
	"context"
	"fmt"
	"strings"
)

// The bulk UPDATEs' document j (jsonUpdate) is a MATERIALIZED CTE, so that
// SQLite reads it once per statement whatever join order it picks: with
// statistics that undercount the table (ANALYZEd while it was small) it
// would otherwise loop over the table outside and parse the whole document
// once per row of the table. Materializing costs about 1 µs per row of the
// batch (an ephemeral table written and read back), a tenth of a batch's
// write on the bench's table; with statistics that do not undercount the
// table, or none, SQLite reads the document once without it.
//
// So a large batch in the Store's transaction asks SQLite first how it
// would run the statement without MATERIALIZED (EXPLAIN QUERY PLAN, on the
// transaction's connection, with its arguments: the plan the statement
// then gets, as the statistics and the schema cannot change while the
// transaction holds the write lock), and runs it so only when the document
// is read once (readsDocumentOnce); otherwise as written. A small batch
// runs as written: the question costs about as much as materializing a
// few dozen rows.

// leanFrom is the smallest batch that asks (see above).
const leanFrom = 64

// materialized and lean are the beginnings of a bulk UPDATE with and
// without the MATERIALIZED.
const (
	materialized = "WITH j AS MATERIALIZED ("
	lean         = "WITH j AS ("
)

// leanOrAsWritten returns st's query without MATERIALIZED when it holds at
// least leanFrom rows and SQLite would then read its document once;
// otherwise st's query.
func (tx *Tx) leanOrAsWritten(ctx context.Context, query string, args []any, rows int) (string, error) {
	if rows < leanFrom || !strings.HasPrefix(query, materialized) {
		return query, nil
	}
	l := lean + query[len(materialized):]
	p, err := explainPlan(ctx, tx.tx, l, args)
	if err != nil {
		return "", err
	}
	if !p.readsDocumentOnce() {
		return query, nil
	}
	return l, nil
}

// queryPlan is EXPLAIN QUERY PLAN's answer: its steps in order, each
// with the id of the step it belongs to (0 for the statement's own).
type queryPlan []planStep

type planStep struct {
	id, parent int
	detail     string
}

// explainPlan is EXPLAIN QUERY PLAN of query with args.
func explainPlan(ctx context.Context, db queryer, query string, args []any) (queryPlan, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	var p queryPlan
	for rows.Next() {
		var st planStep
		var notused int
		if err := rows.Scan(&st.id, &st.parent, &notused, &st.detail); err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
		p = append(p, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	return p, nil
}

func (p queryPlan) String() string {
	var b strings.Builder
	for i, st := range p {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d<%d %s", st.id, st.parent, st.detail)
	}
	return b.String()
}

// readsDocumentOnce reports whether json_each is read in one step, once
// per statement: inside the materialization of j (or its co-routine), or
// as the join's outermost loop. (Anywhere else, a loop outside it would
// read it again for each of its rows.)
func (p queryPlan) readsDocumentOnce() bool {
	materialize, outermost, reads := -1, -1, 0
	for _, st := range p {
		switch {
		case st.parent == 0 && (st.detail == "MATERIALIZE j" || st.detail == "CO-ROUTINE j"):
			materialize = st.id
		case st.parent == 0 && outermost < 0:
			outermost = st.id
		}
	}
	for _, st := range p {
		if strings.Contains(st.detail, "json_each") {
			reads++
			if st.parent != materialize && st.id != outermost {
				return false
			}
		}
	}
	return reads == 1
}
