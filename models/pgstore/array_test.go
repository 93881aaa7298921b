package pgstore

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestArrayEncodesAsTheSlice: an array parameter is the bytes pgx sends for
// the plain slice, NULL elements and a NULL array included.
func TestArrayEncodesAsTheSlice(t *testing.T) {
	t.Parallel()
	m := pgtype.NewMap()
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	for _, c := range []struct {
		oid          uint32
		plain, array any
	}{
		{pgtype.TextArrayOID, []pgtype.Text{{String: "a", Valid: true}, {}, {String: "ü€", Valid: true}}, array[pgtype.Text]{{String: "a", Valid: true}, {}, {String: "ü€", Valid: true}}},
		{pgtype.TextArrayOID, []string{"1", "", "x"}, array[string]{"1", "", "x"}},
		{pgtype.TextArrayOID, []string{"1", "", "ü€"}, texts{"1", "", "ü€"}},
		{pgtype.Int8ArrayOID, []int64{1, -2, 1 << 40}, array[int64]{1, -2, 1 << 40}},
		{pgtype.Int8ArrayOID, []int64{1, -2, 1 << 40}, array[pgtype.Int8]{{Int64: 1, Valid: true}, {Int64: -2, Valid: true}, {Int64: 1 << 40, Valid: true}}},
		{pgtype.Int4ArrayOID, []int32{0, 7}, array[int32]{0, 7}},
		{pgtype.Int4ArrayOID, []int32{0, 7}, array[pgtype.Int4]{{Int32: 0, Valid: true}, {Int32: 7, Valid: true}}},
		{pgtype.TimestamptzArrayOID, []pgtype.Timestamptz{{Time: at, Valid: true}, {}}, array[pgtype.Timestamptz]{{Time: at, Valid: true}, {}}},
		{pgtype.TextArrayOID, []string{}, array[string]{}},
		{pgtype.TextArrayOID, []string(nil), array[string](nil)},
		{pgtype.TextArrayOID, []string(nil), texts(nil)},
	} {
		want, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.plain, nil)
		must(t, err)
		got, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.array, nil)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("%T: %x, want %x", c.array, got, want)
		}
	}
}

// TestArraysEncodeWithoutBoxing: the arrays a save sends (the keys of an
// integer or a text key, an integer column) cost no allocation per
// element: pgx would box each element of a plain int64, int32 or string
// slice again when it dereferences its pointer by reflection.
func TestArraysEncodeWithoutBoxing(t *testing.T) {
	m := pgtype.NewMap()
	ids := make([]string, 1000)
	rows := make([]*models.Row, len(ids))
	for i := range ids {
		ids[i] = strconv.Itoa(100000 + i)
		rows[i] = &models.Row{State: policy.State{AttemptNo: i}}
	}
	buf := make([]byte, 0, 64<<10)
	for _, c := range []struct {
		name  string
		oid   uint32
		value any
	}{
		{"integer keys", pgtype.Int8ArrayOID, idsArg(keyType{kind: kindInt, bits: 64}, ids)},
		{"text keys", pgtype.TextArrayOID, idsArg(keyType{kind: kindString}, ids)},
		{"integer column", pgtype.Int4ArrayOID, columnArray(models.StateColumn(models.ColAttemptNo), rows)},
	} {
		allocs := testing.AllocsPerRun(10, func() {
			if _, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.value, buf[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 5 {
			t.Errorf("%s: %v allocations to encode %d elements", c.name, allocs, len(ids))
		}
	}
}

// BenchmarkEncodeTextArray encodes 1000 attempt UIDs as Save sends them:
// the plain slice against array.
//
//	go test ./models/pgstore -run '^$' -bench EncodeTextArray -benchmem
func BenchmarkEncodeTextArray(b *testing.B) {
	m := pgtype.NewMap()
	uids := make([]pgtype.Text, 1000)
	for i := range uids {
		uids[i] = pgtype.Text{String: "d4m0abc0000000" + strconv.Itoa(100000+i), Valid: true}
	}
	buf := make([]byte, 0, 64<<10)
	for _, c := range []struct {
		name  string
		value any
	}{{"slice", uids}, {"array", array[pgtype.Text](uids)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, c.value, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
