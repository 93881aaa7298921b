package migrations

import "testing"

// TestSchemaIndexOn: an index on exactly the columns, in order, whatever
// its name; of several, the first by name, so that a progress line names
// the same one on every run; names fold only where the database folds them.
func TestSchemaIndexOn(t *testing.T) {
	t.Parallel()
	s := NewSchema(false)
	s.Indexes = map[string][]string{
		"z_at": {"refresh_at"}, "b_at": {"refresh_at"}, "m_at": {"refresh_at"},
		"pair": {"a", "b"}, "Upper": {"Refresh_At"},
	}
	for range 20 { // map order varies from run to run
		if name, ok := s.IndexOn([]string{"refresh_at"}); !ok || name != "b_at" {
			t.Fatalf("IndexOn(refresh_at) = %q, %v; want b_at", name, ok)
		}
	}
	if name, ok := s.IndexOn([]string{"b", "a"}); ok {
		t.Fatalf("IndexOn(b, a) = %q: the columns' order counts", name)
	}
	if !s.HasIndex("Upper") || s.HasIndex("upper") {
		t.Fatal("HasIndex folded the case of a database that does not fold it")
	}
	f := NewSchema(true)
	f.Indexes["idx_refresh_at"] = []string{"refresh_at"}
	if !f.HasIndex("IDX_Refresh_At") {
		t.Fatal("HasIndex did not fold the case of a database that folds it")
	}
	if name, ok := f.IndexOn([]string{"Refresh_At"}); !ok || name != "idx_refresh_at" {
		t.Fatalf("folded IndexOn(Refresh_At) = %q, %v", name, ok)
	}
}
