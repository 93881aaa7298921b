package pgstore

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// array is a slice as an array parameter (pgtype.ArrayGetter) whose
// elements pgx encodes through a pointer to each: a pointer fits in an
// interface, so no element is copied to the heap. A plain slice costs an
// allocation per element (boxed into an interface by pgtype.FlatArray, or
// by reflection for a slice of pgtype.Text), which for a batch's
// attempt UIDs or keys made the encoding 5-6 times slower.
//
// T is a pgtype value (pgtype.Text, Int8, Int4, Timestamptz), whose
// pointer implements the valuer its codec encodes directly. A pointer to
// a Go int64, int32 or string does not: pgx dereferences it by reflection
// (derefPointerEncodePlan), which boxes each element again, an allocation
// per element of 1000 (see texts for strings).
type array[T any] []T

// Dimensions implements pgtype.ArrayGetter: one dimension, or none (NULL)
// for a nil slice.
func (a array[T]) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index implements pgtype.ArrayGetter.
func (a array[T]) Index(i int) any { return &a[i] }

// IndexType implements pgtype.ArrayGetter.
func (a array[T]) IndexType() any { return new(T) }

// texts is a slice of strings as a text[] parameter, encoded like array
// through a pointer to each element, typed so that pgx finds its
// TextValuer without dereferencing it by reflection (see array): a
// batch's keys travel without a copy of the slice.
type texts []string

// Dimensions implements pgtype.ArrayGetter.
func (a texts) Dimensions() []pgtype.ArrayDimension { return array[string](a).Dimensions() }

// Index implements pgtype.ArrayGetter.
func (a texts) Index(i int) any { return (*textElem)(&a[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a texts) IndexType() any { return new(textElem) }

// plain implements plainer.
func (a texts) plain() any { return []string(a) }

// textElem is an element of texts: never NULL, "" an empty text.
type textElem string

// TextValue implements pgtype.TextValuer.
func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

// plain implements plainer: the slice itself, which pgx encodes in any
// mode.
func (a array[T]) plain() any { return []T(a) }

// plainer is an array parameter that can give its plain slice.
type plainer interface{ plain() any }

// textArrays reports whether pgx encodes a pool's parameters knowing the
// Go values only, not the statement's parameter types (the exec modes
// simple_protocol and exec, which default_query_exec_mode in the URL
// selects, e.g. behind PgBouncer): it then looks their type up by Go type,
// and finds none for array.
func textArrays(mode pgx.QueryExecMode) bool {
	return mode == pgx.QueryExecModeSimpleProtocol || mode == pgx.QueryExecModeExec
}

// encodable returns args as the Store's pool can encode them: each array
// as its plain slice when the pool's exec mode needs it (textArrays), at
// the cost of boxing its elements; otherwise args as they are.
func (s *Store) encodable(args []any) []any {
	if !s.textArrays {
		return args
	}
	for i, a := range args {
		if p, ok := a.(plainer); ok {
			args[i] = p.plain()
		}
	}
	return args
}
