package payload

import (
	"reflect"
	"testing"
)

// TestGetAndMap: Get finds a column by name (nil when absent or NULL),
// Map holds every column, and no fields is a nil map.
func TestGetAndMap(t *testing.T) {
	f := Fields{{Name: "url", Value: "https://x"}, {Name: "size", Value: int64(7)}, {Name: "gone", Value: nil}}
	if got := f.Get("size"); got != int64(7) {
		t.Fatalf("Get(size) = %v", got)
	}
	if got := f.Get("nope"); got != nil {
		t.Fatalf("Get(nope) = %v, want nil", got)
	}
	want := map[string]any{"url": "https://x", "size": int64(7), "gone": nil}
	if got := f.Map(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Map() = %v, want %v", got, want)
	}
	if got := Fields(nil).Map(); got != nil {
		t.Fatalf("Map() of none = %v, want nil", got)
	}
}

// TestBlocksTake: each row's payload has its names and nil values, is
// capped at its length (an append never writes into the next row's), and
// a read of many rows allocates a block per blockRows rows, not per row.
func TestBlocksTake(t *testing.T) {
	names := []string{"a", "b"}
	b := Blocks{Hint: 1000}
	first := b.Take(names)
	second := b.Take(names)
	if !reflect.DeepEqual(first, Fields{{Name: "a"}, {Name: "b"}}) {
		t.Fatalf("Take = %v", first)
	}
	if cap(first) != len(first) {
		t.Fatalf("cap %d, want %d", cap(first), len(first))
	}
	first[0].Value = "x"
	_ = append(first, Field{Name: "c", Value: "y"})
	if second[0].Name != "a" || second[0].Value != nil {
		t.Fatalf("an append to one row's payload reached the next: %v", second)
	}
	if got := b.Take(nil); got != nil {
		t.Fatalf("Take(no names) = %v, want nil", got)
	}
	allocs := testing.AllocsPerRun(10, func() {
		b := Blocks{Hint: 1000}
		for range 1000 {
			b.Take(names)
		}
	})
	if allocs > 4 { // 1000 rows in blocks of blockRows (256)
		t.Fatalf("%v allocations for 1000 rows, want at most 4", allocs)
	}
	var one Blocks
	if got := one.Take(names); len(got) != 2 {
		t.Fatalf("the zero Blocks took %v", got)
	}
}
