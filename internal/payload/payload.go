// Package payload holds a row's payload: the values of the payload
// columns a kind reads with each claimed row and copies into its job.
//
// A claim read each row's payload into a map of its own, which cost a
// map header and a group of eight slots (about 340 bytes, two
// allocations) per row, the largest allocation of a claim; a map was then
// walked and its keys sorted to write each job. Fields is a plain slice
// instead, carved for a whole read from a few shared blocks (Blocks), and
// written to a job in the columns' name order (redisio).
package payload

// Field is one payload column and its value.
type Field struct {
	// Name is the column's name, as the kind's table lists it.
	Name string
	// Value is the column's value, JSON-friendly (models.Row.Payload says
	// which Go types a driver gives).
	Value any
}

// Fields is a row's payload, one Field per payload column in the order
// the table lists them (not sorted). Nil when the table has no payload
// columns or the row was read without them.
type Fields []Field

// Get returns the value of the column name; nil when the column is NULL
// or not among the fields.
func (f Fields) Get(name string) any {
	for i := range f {
		if f[i].Name == name {
			return f[i].Value
		}
	}
	return nil
}

// Map returns the fields as a map (for the API, logs and tests); nil when
// there are none.
func (f Fields) Map() map[string]any {
	if len(f) == 0 {
		return nil
	}
	m := make(map[string]any, len(f))
	for _, x := range f {
		m[x.Name] = x.Value
	}
	return m
}

// blockRows is how many rows' payloads one block holds at most.
const blockRows = 256

// Blocks hands out the payloads of one read's rows from shared blocks,
// so that a read of many rows allocates a few blocks, not a slice per
// row. The zero value is ready (a block per row).
type Blocks struct {
	// Hint is how many rows the read expects (the claim's limit): each
	// block holds that many rows' payloads, at most blockRows.
	Hint int
	free []Field
}

// Take returns a payload for the next row with names set and every value
// nil. Its capacity is its length: appending to it never writes into
// another row's payload.
func (b *Blocks) Take(names []string) Fields {
	n := len(names)
	if n == 0 {
		return nil
	}
	if len(b.free) < n {
		b.free = make([]Field, n*min(max(b.Hint, 1), blockRows))
	}
	f := Fields(b.free[:n:n])
	b.free = b.free[n:]
	for i := range f {
		f[i].Name = names[i]
	}
	return f
}
