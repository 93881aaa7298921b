package pgstore

import "github.com/jackc/pgx/v5/pgtype"

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
