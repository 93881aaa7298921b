package pgstore

import (
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
)

// pgx encodes a statement's parameters into a buffer of its connection's
// that it drops after every statement once it has grown past 256 bytes
// (ExtendedQueryBuilder.reset), so each batch's array parameters grew a
// new one by appending element after element: about twenty reallocations
// and copies for the 1000 keys and attempt UIDs of a Save, three times the
// CPU of encoding them into a buffer large enough, and a fifth of the bytes
// the service allocated on PostgreSQL. The array types of the parameters
// a save sends say how large they encode (sizer), and the connections Open
// makes encode them into a buffer grown once to that size (presizeArrays).

// sizer is an array parameter that knows about how many bytes its binary
// encoding takes. An estimate: too little costs pgx more growth, too much
// a larger buffer.
type sizer interface{ encodedSize() int }

// arrayHeaderSize is the binary array header of one dimension: the number
// of dimensions, the null flag, the element type and the dimension's
// length and lower bound, 4 bytes each.
const arrayHeaderSize = 20

// encodedSize implements sizer: each element's length prefix and value (a
// NULL element is its prefix alone, counted as a value all the same).
func (a array[T]) encodedSize() int {
	n := arrayHeaderSize + 4*len(a)
	switch v := any(a).(type) {
	case array[pgtype.Text]:
		for i := range v {
			n += len(v[i].String)
		}
	case array[string]:
		return texts(v).encodedSize()
	case array[pgtype.Int4], array[int32]:
		n += 4 * len(a)
	default: // Int8, Timestamptz
		n += 8 * len(a)
	}
	return n
}

// encodedSize implements sizer.
func (a texts) encodedSize() int {
	n := arrayHeaderSize + 4*len(a)
	for _, s := range a {
		n += len(s)
	}
	return n
}

// presizedArrays are the array types of the parameters Save and
// SaveSuccesses send (columnArray, idsArg, texts).
var presizedArrays = []uint32{
	pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.Int4ArrayOID, pgtype.TimestamptzArrayOID,
}

// presizeArrays registers, in the type map of one connection, the array
// types of presizedArrays again with their codec wrapped in presized.
// Open calls it for each connection it makes; a pool handed to New
// without it encodes the same bytes, only growing its buffer as it goes.
func presizeArrays(m *pgtype.Map) {
	for _, oid := range presizedArrays {
		if t, ok := m.TypeForOID(oid); ok {
			m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: presized{t.Codec}})
		}
	}
}

// presized is an array codec whose binary encoding of a sizer first grows
// the buffer to the size the sizer gives; everything else is the codec's.
type presized struct{ pgtype.Codec }

// PlanEncode implements pgtype.Codec.
func (c presized) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	plan := c.Codec.PlanEncode(m, oid, format, value)
	if _, ok := value.(sizer); ok && plan != nil && format == pgtype.BinaryFormatCode {
		return growPlan{plan}
	}
	return plan
}

// growPlan grows the buffer for a sizer, then encodes it with the codec's
// own plan.
type growPlan struct{ next pgtype.EncodePlan }

// Encode implements pgtype.EncodePlan.
func (p growPlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(value, slices.Grow(buf, value.(sizer).encodedSize()))
}
