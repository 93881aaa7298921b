package mysqlstore

import (
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// TestStateScanDestsAsDatabaseSQL: the claim's own scan destinations give
// what sql.NullTime, sql.NullString and *int give for every value the
// driver may hand them (errors included), and the common ones cost no
// allocation but the text's copy.
func TestStateScanDestsAsDatabaseSQL(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC)
	srcs := []any{nil, at, time.Time{}, []byte("42"), []byte("-7"), []byte("x"), []byte("99999999999999999999"), "42", int64(42), float64(4.5), true}
	for _, src := range srcs {
		var nt sql.NullTime
		var td timeDest
		if werr, gerr := nt.Scan(src), td.Scan(src); fmt.Sprint(werr) != fmt.Sprint(gerr) || (werr == nil && td.NullTime != nt) {
			t.Errorf("time %#v: got %+v, %v; want %+v, %v", src, td.NullTime, gerr, nt, werr)
		}
		var ns sql.NullString
		var sd textDest
		if werr, gerr := ns.Scan(src), sd.Scan(src); fmt.Sprint(werr) != fmt.Sprint(gerr) || (werr == nil && sd.NullString != ns) {
			t.Errorf("text %#v: got %+v, %v; want %+v, %v", src, sd.NullString, gerr, ns, werr)
		}
		var id intDest
		var n int
		werr := convertInt(&n, src)
		gerr := id.Scan(src)
		if (werr == nil) != (gerr == nil) || (werr == nil && int(id) != n) {
			t.Errorf("int %#v: got %d, %v; want %d, %v", src, id, gerr, n, werr)
		}
	}
	var (
		td  timeDest
		id  intDest
		sd  textDest
		tv  any = at // as the driver hands them: in an interface already
		num any = []byte("12345")
	)
	if n := testing.AllocsPerRun(100, func() {
		_ = td.Scan(tv)
		_ = td.Scan(nil)
		_ = id.Scan(num)
		_ = sd.Scan(nil)
	}); n != 0 {
		t.Errorf("%v allocations per row's times, int and NULL text; want 0", n)
	}
}
