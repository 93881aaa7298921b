package models

import (
	"fmt"
	"strconv"
	"strings"
)

// UnionNextDue is the part of Store.NextDueMany every SQL driver shares: for
// each chunk of NextDueChunk tables it builds one statement, a UNION ALL of
// "SELECT i, (sub)" where sub is the driver's NextDue query of tables[i],
// and hands it to run, which executes it and fills out[i] from each row.
// sub's errors are returned as they are; run's are wrapped with the chunk
// they were about.
func UnionNextDue(tables []Table, sub func(Table) (string, error), run func(query string, out []Next) error) ([]Next, error) {
	out := make([]Next, len(tables))
	for start := 0; start < len(tables); start += NextDueChunk {
		chunk := tables[start:min(start+NextDueChunk, len(tables))]
		var b strings.Builder
		for i, t := range chunk {
			q, err := sub(t)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteString(" UNION ALL ")
			}
			b.WriteString("SELECT " + strconv.Itoa(start+i) + ", (" + q + ")")
		}
		if err := run(b.String(), out); err != nil {
			return nil, fmt.Errorf("find next refresh_at of %d tables (%s, ...): %w", len(chunk), chunk[0].Name, err)
		}
	}
	return out, nil
}
