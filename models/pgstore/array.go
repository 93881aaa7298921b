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
